"""The platform decisions that used to live only as cluster settings nobody signed off (the scheduling model of a
cluster or pool, the gang backend of a cluster, who owns a cluster's or pool's driver upgrades), and the planned
driver upgrades. Everything else in the register is computed; these rows are what the platform team records.

A decision without a sign-off is a draft: the register shows the setting it is about as inherited until someone
signs it off, and as a conflict when a signed-off value no longer matches what is configured or running.
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from provisioning.choices import GangScheduler, SchedulingModel
from provisioning.models import Cluster, NodePool, driver_version_validator

from .choices import DECISION_VALUE_KEYS, DecisionArea, UpgradeStatus

ALLOWED_VALUES = {
    DecisionArea.SCHEDULING_MODEL: tuple(SchedulingModel.values),
    DecisionArea.GANG_BACKEND: tuple(GangScheduler.values),
}


def decision_value_errors(*, area: str, value, pool_id) -> dict[str, list[str]]:
    """What is wrong with a decision's value for its area (also used by the services)."""
    errors: dict[str, list[str]] = {}
    if area not in DecisionArea.values:
        return {"area": [f"One of {', '.join(DecisionArea.values)}."]}
    if not isinstance(value, dict):
        return {"value": ["Must be an object."]}
    key = DECISION_VALUE_KEYS.get(area)
    if key is None:
        if value:
            errors["value"] = ["A driver lifecycle decision carries no value: its owner owns the upgrades, and "
                               "planned upgrades are recorded as driver upgrade plans."]
    elif set(value) != {key} or value[key] not in ALLOWED_VALUES[area]:
        errors["value"] = [f'Must be {{"{key}": one of {", ".join(ALLOWED_VALUES[area])}}}.']
    if area == DecisionArea.GANG_BACKEND and pool_id is not None:
        errors["pool"] = ["The gang backend is chosen per cluster; leave the pool empty."]
    return errors


class PlatformDecision(models.Model):
    """One recorded platform decision about a cluster (pool empty) or one of its pools."""

    area = models.CharField(max_length=20, choices=DecisionArea.choices)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="platform_decisions")
    pool = models.ForeignKey(
        NodePool, null=True, blank=True, on_delete=models.CASCADE, related_name="platform_decisions",
        help_text="empty: the whole cluster (pools without a decision of their own follow it)",
    )  # fmt: skip
    value = models.JSONField(
        default=dict, blank=True,
        help_text='what was decided: {"scheduling_model": "dra"}, {"gang_backend": "volcano"}; empty for driver '
                  "lifecycle",
    )  # fmt: skip
    owner = models.CharField(
        max_length=150, help_text="person or team accountable; for driver lifecycle, who owns the upgrades"
    )
    rationale = models.TextField(help_text="why; shown in the register beside the decision")
    signed_off_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    signed_off_by_name = models.CharField(max_length=150, blank=True, help_text="kept if the user is deleted")
    signed_off_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster__name", "pool__name", "area"]
        constraints = [
            # One current decision per area and subject; a change is an edit that needs a new sign-off.
            models.UniqueConstraint(
                fields=["area", "cluster", "pool"], nulls_distinct=False, name="%(app_label)s_%(class)s_one_per_subject"
            ),
            models.CheckConstraint(
                condition=~Q(area=DecisionArea.GANG_BACKEND) | Q(pool__isnull=True),
                name="%(app_label)s_%(class)s_gang_per_cluster",
            ),
            models.CheckConstraint(
                condition=Q(signed_off_at__isnull=True) | ~Q(signed_off_by_name=""),
                name="%(app_label)s_%(class)s_signoff_names_signer",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_area_display()} of {self.subject}"

    @property
    def subject(self) -> str:
        return f"{self.cluster.name}/{self.pool.name}" if self.pool_id else self.cluster.name

    @property
    def is_signed_off(self) -> bool:
        return self.signed_off_at is not None

    @property
    def decided_value(self) -> str | None:
        key = DECISION_VALUE_KEYS.get(self.area)
        return (self.value or {}).get(key) if key else None

    def clean(self):
        errors = decision_value_errors(area=self.area, value=self.value, pool_id=self.pool_id)
        if self.pool_id and self.cluster_id and self.pool.cluster_id != self.cluster_id:
            errors.setdefault("pool", []).append("The pool must belong to the cluster.")
        if errors:
            raise ValidationError(errors)


class DriverUpgradePlan(models.Model):
    """A planned NVIDIA driver upgrade of a pool (or of every pool of a cluster). The register shows the next one
    and which live requests it would strand (`provisioning.selectors.driver_upgrade_impact`)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="driver_upgrade_plans")
    pool = models.ForeignKey(
        NodePool, null=True, blank=True, on_delete=models.CASCADE, related_name="driver_upgrade_plans",
        help_text="empty: every pool of the cluster",
    )  # fmt: skip
    target_version = models.CharField(max_length=20, validators=[driver_version_validator])
    planned_for = models.DateField()
    status = models.CharField(max_length=10, choices=UpgradeStatus.choices, default=UpgradeStatus.PLANNED)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["planned_for", "cluster__name", "pool__name", "id"]

    def __str__(self) -> str:
        where = f"{self.cluster.name}/{self.pool.name}" if self.pool_id else f"{self.cluster.name} (all pools)"
        return f"{where} -> {self.target_version} on {self.planned_for}"

    def clean(self):
        if self.pool_id and self.cluster_id and self.pool.cluster_id != self.cluster_id:
            raise ValidationError({"pool": "The pool must belong to the cluster."})

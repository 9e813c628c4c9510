"""Routing policy (versioned, signed off), GPU requests and their audit trail."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from portal.models import Team, slug_validator

from .choices import (
    REQUEST_TERMINAL,
    EventKind,
    PolicyStatus,
    RequestOrigin,
    RequestStatus,
    RuleKind,
)
from .fields import DecisionField
from .policy import rule_validation_errors


class PolicyVersion(models.Model):
    """One version of the routing policy. Immutable once signed off; changes make a new version."""

    number = models.PositiveIntegerField(unique=True)
    status = models.CharField(max_length=10, choices=PolicyStatus.choices, default=PolicyStatus.DRAFT)
    notes = models.TextField(blank=True, help_text="What changed and why.")
    based_on = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    signed_off_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    signed_off_by_name = models.CharField(max_length=150, blank=True)
    signed_off_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    review = models.JSONField(
        null=True, blank=True, help_text="the diff the signer saw: digest, window, counts per workload class"
    )

    class Meta:
        ordering = ["-number"]
        constraints = [
            # At most one version is in force at a time.
            models.UniqueConstraint(
                fields=["status"], condition=Q(status="active"), name="%(app_label)s_%(class)s_one_active"
            ),
        ]

    def __str__(self) -> str:
        return f"policy v{self.number} ({self.status})"

    @property
    def is_editable(self) -> bool:
        return self.status == PolicyStatus.DRAFT


class Rule(models.Model):
    version = models.ForeignKey(PolicyVersion, on_delete=models.CASCADE, related_name="rules")
    key = models.CharField(max_length=63, validators=[slug_validator], help_text="stable name across versions")
    kind = models.CharField(max_length=10, choices=RuleKind.choices, default=RuleKind.ROUTE)
    position = models.PositiveIntegerField(default=100, help_text="tie-breaker: lower wins among equally specific")
    match = models.JSONField(help_text='answers this rule applies to, e.g. {"workload_class": ["training"]}')
    outcome = models.JSONField(help_text='e.g. {"strategy": "mig", "fallback_strategy": "whole_gpu"}')
    rationale = models.TextField()
    owner = models.CharField(max_length=150, help_text="person or team accountable for this rule")
    signed_off_by = models.CharField(max_length=150, blank=True)
    signed_off_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["version", "kind", "position", "key"]
        constraints = [
            models.UniqueConstraint(fields=["version", "key"], name="%(app_label)s_%(class)s_unique_version_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key} (v{self.version.number})"

    def clean(self):
        errors = rule_validation_errors(kind=self.kind, match=self.match, outcome=self.outcome)
        if errors:
            raise ValidationError(errors)


class GpuRequest(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="requests")
    name = models.CharField(max_length=63, validators=[slug_validator])
    status = models.CharField(
        max_length=20, choices=RequestStatus.choices, default=RequestStatus.PENDING_APPROVAL, db_index=True
    )
    answers = models.JSONField(help_text="answers with defaults filled in")
    defaulted_answers = models.JSONField(default=list, blank=True, help_text="answers that took their default")
    decision = DecisionField(help_text="the placement decision as it was made (snapshot; intake.decisions.Decision)")
    policy_version = models.ForeignKey(PolicyVersion, on_delete=models.PROTECT, related_name="requests")
    rule_key = models.CharField(max_length=63, blank=True, help_text="route that decided; blank = platform default")
    # Denormalised from answers/decision for filtering and reporting without JSON lookups.
    workload_class = models.CharField(max_length=20, db_index=True)
    strategy = models.CharField(max_length=20, db_index=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gpu_requests")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    status_changed_at = models.DateTimeField(auto_now_add=True)
    origin = models.CharField(
        max_length=10, choices=RequestOrigin.choices, default=RequestOrigin.PORTAL,
        help_text="found in the cluster: a Job applied straight into a team's Kueue queue, held by the admission check",
    )
    # --- status reconciliation (reconcile) ---
    pods_missing_since = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="set by status reconciliation while the cluster shows no pod of this request",
    )  # fmt: skip
    # --- leases: set at approval from the decision's lease, moved by extensions ---
    lease_expires_at = models.DateTimeField(null=True, blank=True, editable=False, db_index=True,
                                            help_text="when the grant is taken down; empty: no lease")
    lease_reminded_at = models.DateTimeField(null=True, blank=True, editable=False,
                                             help_text="when the reminder for the current expiry went out")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name, verbose_name_plural = "GPU request", "GPU requests"
        constraints = [
            # A team cannot have two live requests of the same name (their Kubernetes objects would collide).
            models.UniqueConstraint(
                fields=["team", "name"],
                condition=~Q(status__in=sorted(REQUEST_TERMINAL)),
                name="%(app_label)s_%(class)s_unique_active_name",
            ),
        ]
        indexes = [
            models.Index(fields=["team", "status"]),
            # Serves the lists' ordering (-created_at, -id, scanned backwards): a page is read without a sort.
            models.Index(fields=["created_at", "id"], name="intake_request_created_id_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.team.slug}/{self.name} (#{self.pk})"

    @property
    def is_terminal(self) -> bool:
        return self.status in REQUEST_TERMINAL


class RequestEvent(models.Model):
    """The audit trail: every status change, and (later) what the cluster reported, in plain words."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=20, choices=EventKind.choices, default=EventKind.TRANSITION)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    from_status = models.CharField(max_length=20, blank=True)
    to_status = models.CharField(max_length=20, blank=True)
    comment = models.TextField(blank=True)
    reason = models.CharField(max_length=63, blank=True, help_text="machine-readable cause, e.g. OOMKilled")
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    # --- status reconciliation (reconcile) ---
    # Names the fact a cluster event reports (e.g. "<pod uid>:scheduled"), so that seeing it again records nothing.
    dedupe_key = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            # --- status reconciliation (reconcile) ---
            models.UniqueConstraint(
                fields=["request", "dedupe_key"], condition=~Q(dedupe_key=""),
                name="%(app_label)s_%(class)s_unique_dedupe_key",
            ),  # fmt: skip
        ]

    def __str__(self) -> str:
        return f"{self.request_id}: {self.from_status or '-'} -> {self.to_status or '-'}"


class PendingApprovalManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(status=RequestStatus.PENDING_APPROVAL)


class PendingApproval(GpuRequest):
    """The platform team's approval queue in the admin: requests waiting for a decision."""

    objects = PendingApprovalManager()

    class Meta:
        proxy = True
        verbose_name = "request awaiting approval"
        verbose_name_plural = "approval queue"

"""Writes of the register: recording a platform decision, signing it off, and planning driver upgrades. Only the
platform team writes. Changing what a signed-off decision says takes its sign-off away: a changed decision is
not decided until someone signs it off again."""
from __future__ import annotations

import datetime

from django.db import transaction
from django.utils import timezone

from portal.errors import InvalidInput, NotFound, PermissionDenied
from portal.roles import is_platform
from provisioning.models import Cluster, NodePool, driver_version_validator

from .choices import UpgradeStatus
from .models import DriverUpgradePlan, PlatformDecision, decision_value_errors


def _require_platform(user, what: str) -> None:
    if not is_platform(user):
        raise PermissionDenied(f"Only the platform team {what}.")


def _pool_of(cluster: Cluster, pool: NodePool | None) -> NodePool | None:
    if pool is not None and pool.cluster_id != cluster.pk:
        raise InvalidInput(f"Pool {pool.name} is not a pool of {cluster.name}.", field="pool")
    return pool


@transaction.atomic
def platform_decision_record(*, user, area: str, cluster: Cluster, pool: NodePool | None = None, value: dict,
                             owner: str, rationale: str, decision_id: int | None = None) -> PlatformDecision:
    """Create or change the decision of `area` about `cluster` (or one of its pools). A change to the area,
    subject, value, owner or rationale of a signed-off decision clears its sign-off."""
    _require_platform(user, "records platform decisions")
    pool = _pool_of(cluster, pool)
    errors = decision_value_errors(area=area, value=value, pool_id=pool.pk if pool else None)
    if errors:
        field, messages = next(iter(errors.items()))
        raise InvalidInput(" ".join(messages), field=field)
    owner, rationale = (owner or "").strip(), (rationale or "").strip()
    if not owner:
        raise InvalidInput("Name the person or team accountable for this decision.", field="owner")
    if not rationale:
        raise InvalidInput("Say why; the register shows it beside the decision.", field="rationale")
    if decision_id is not None:
        decision = PlatformDecision.objects.select_for_update(no_key=True).filter(pk=decision_id).order_by("pk").first()
        if decision is None:
            raise NotFound("No such decision.")
    else:
        decision = PlatformDecision(created_by=user)
    if PlatformDecision.objects.filter(area=area, cluster=cluster, pool=pool).exclude(pk=decision.pk).exists():
        raise InvalidInput(f"{cluster.name}{'/' + pool.name if pool else ''} already has a {area} decision; "
                           "change that one.", field="area")
    content = (area, cluster.pk, pool.pk if pool else None, value, owner, rationale)
    before = (decision.area, decision.cluster_id, decision.pool_id, decision.value, decision.owner, decision.rationale)
    if decision.pk is None or content != before:
        decision.signed_off_by, decision.signed_off_by_name, decision.signed_off_at = None, "", None
    decision.area, decision.cluster, decision.pool = area, cluster, pool
    decision.value, decision.owner, decision.rationale = value, owner, rationale
    decision.save()
    return decision


@transaction.atomic
def platform_decision_sign_off(*, user, decision_id: int) -> PlatformDecision:
    """Sign off a recorded decision as it stands. It may say something the cluster does not do yet (a migration
    that is decided but not carried out): the register then shows it as a conflict until reality follows."""
    _require_platform(user, "signs off platform decisions")
    decision = PlatformDecision.objects.select_for_update(no_key=True).filter(pk=decision_id).order_by("pk").first()
    if decision is None:
        raise NotFound("No such decision.")
    decision.signed_off_by = user
    decision.signed_off_by_name = user.get_username()
    decision.signed_off_at = timezone.now()
    decision.save(update_fields=["signed_off_by", "signed_off_by_name", "signed_off_at", "updated_at"])
    return decision


@transaction.atomic
def driver_upgrade_plan_record(*, user, cluster: Cluster, pool: NodePool | None = None, target_version: str,
                               planned_for: datetime.date, note: str = "", status: str = UpgradeStatus.PLANNED,
                               plan_id: int | None = None) -> DriverUpgradePlan:
    """Create or change a planned driver upgrade of a pool (or of every pool of the cluster)."""
    from django.core.exceptions import ValidationError

    _require_platform(user, "plans driver upgrades")
    pool = _pool_of(cluster, pool)
    try:
        driver_version_validator(target_version or "")
    except ValidationError:
        raise InvalidInput("A driver version such as 580.65.06.", field="target_version") from None
    if status not in UpgradeStatus.values:
        raise InvalidInput(f"One of {', '.join(UpgradeStatus.values)}.", field="status")
    if plan_id is not None:
        plan = DriverUpgradePlan.objects.select_for_update(no_key=True).filter(pk=plan_id).order_by("pk").first()
        if plan is None:
            raise NotFound("No such driver upgrade plan.")
    else:
        plan = DriverUpgradePlan(created_by=user)
    plan.cluster, plan.pool, plan.target_version = cluster, pool, target_version
    plan.planned_for, plan.note, plan.status = planned_for, (note or "").strip(), status
    plan.save()
    return plan

"""Writes of hardware-fault credits: recording them (from a collection pass, under its cluster lock) and finance's
reversal (the admin)."""
from __future__ import annotations

from datetime import datetime
from typing import Sequence

from django.db import transaction
from django.utils import timezone

from intake.events import events_cluster_record
from portal.errors import Conflict, InvalidInput, PermissionDenied
from portal.roles import is_finance, is_platform

from ..allocation import ClusterFacts, claims_by_name, pod_devices, slice_devices
from ..models import UsageInterval
from ..services.locks import frozen_until, lock_cluster
from .health import pod_fault, taint_rules_by_device
from .models import HardwareCredit


def credits_record(*, pods: Sequence[dict], facts: ClusterFacts | None) -> list[HardwareCredit]:
    """Credit the last run of every Failed pod whose device was unhealthy (chargeback.credits.health), once per
    run. Runs inside an ingestion pass, after its intervals are written, under the cluster's lock."""
    failed = {(p.get("metadata") or {}).get("uid"): p for p in pods if (p.get("status") or {}).get("phase") == "Failed"}
    failed.pop(None, None)
    if not failed:
        return []
    facts = facts or ClusterFacts()
    intervals = {}  # each pod's last segment (a waste window may have split it), once it has ended
    for interval in UsageInterval.objects.filter(pod_uid__in=list(failed)).order_by("pod_uid", "started_at"):
        intervals[interval.pod_uid] = interval
    intervals = {uid: i for uid, i in intervals.items() if i.ended_at is not None}
    if not intervals:
        return []
    claims, devices = claims_by_name(facts.claims), slice_devices(facts.slices)
    rules = taint_rules_by_device(facts.taint_rules)
    nodes = {(n.get("metadata") or {}).get("name"): n for n in facts.nodes}
    horizon = frozen_until()
    credits = []
    for uid, interval in intervals.items():
        pod = failed[uid]
        allocated = pod_devices(pod, claims=claims, devices=devices) or []
        fault = pod_fault(pod, ended_at=interval.ended_at, devices=[d.key for d in allocated], slice_devices=devices,
                          taint_rules=rules, node=nodes.get((pod.get("spec") or {}).get("nodeName")))
        if fault is None:
            continue
        started = max(interval.started_at, fault.run_started_at or interval.started_at)
        if started >= interval.ended_at:
            continue
        credits.append(HardwareCredit(
            interval=interval, pod_uid=uid, namespace=interval.namespace, pod_name=interval.pod_name,
            request_id=interval.request_id, team_id=interval.team_id, cost_center=interval.cost_center,
            cluster=interval.cluster, strategy=interval.strategy, gpu_model=interval.gpu_model,
            mig_profile=interval.mig_profile, devices=interval.devices, equivalents_num=interval.equivalents_num,
            equivalents_den=interval.equivalents_den, started_at=started, ended_at=interval.ended_at,
            reason=fault.reason[:300], evidence=list(fault.evidence), created_horizon=horizon,
        ))
    # One per run: a pass that sees the same failed pod again records nothing (the unique pod_uid, started_at).
    existing = set(HardwareCredit.objects.filter(pod_uid__in=[c.pod_uid for c in credits])
                   .values_list("pod_uid", "started_at"))
    new = [c for c in credits if (c.pod_uid, c.started_at) not in existing]
    HardwareCredit.objects.bulk_create(new, ignore_conflicts=True)
    events_cluster_record(items=[
        (c.request_id, f"{c.pod_uid}:hardware-credit", "HardwareFaultCredit",
         f"Pod {c.pod_name} failed on broken hardware; its last run ({c.started_at:%Y-%m-%d %H:%M} to "
         f"{c.ended_at:%H:%M} UTC) is credited. {c.reason}") for c in new if c.request_id])
    return new


@transaction.atomic
def credit_reverse(*, credit: HardwareCredit, user, reason: str, now: datetime | None = None) -> HardwareCredit:
    """Finance takes a credit back (the fault was the workload's after all, say). Its lines go where they are still
    open; what a closed month already showed is booked back in the first open month (docs/chargeback.md)."""
    if not (is_finance(user) or is_platform(user)):
        raise PermissionDenied("Only finance and the platform team reverse credits.")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("Say why the credit is reversed.", field="reason")
    lock_cluster(credit.cluster)  # a month close waits for this, and this for a close in flight
    credit = HardwareCredit.objects.select_for_update().get(pk=credit.pk)
    if credit.reversed_at is not None:
        raise Conflict(f"This credit was already reversed on {credit.reversed_at:%Y-%m-%d}.")
    credit.reversed_at = now or timezone.now()
    credit.reversed_by = user
    credit.reversal_reason = reason[:200]
    credit.reversed_horizon = frozen_until()
    credit.save(update_fields=["reversed_at", "reversed_by", "reversal_reason", "reversed_horizon"])
    if credit.request_id:
        events_cluster_record(items=[(credit.request_id, f"{credit.pod_uid}:hardware-credit-reversed",
                                      "HardwareFaultCreditReversed",
                                      f"The credit for pod {credit.pod_name}'s last run was reversed: {reason}")])
    return credit

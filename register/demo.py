"""Demo decisions for the quickstart register, recorded through the same services as the admin: gpu-east's
scheduling model, gang backend and driver upgrades are signed off (with a planned upgrade), and so is moving its
h100-train pool to DRA, which is not done yet (a conflict); gpu-west's DRA decision is recorded but not signed off
and nobody owns its drivers; and a policy draft that moves latency-sensitive inference from MIG slices to whole
GPUs awaits review. Idempotent: what exists is left as it is."""
from __future__ import annotations

import datetime

from django.utils import timezone

from intake.choices import PolicyStatus
from intake.models import PolicyVersion, Rule
from intake.services import policy_version_draft_create
from provisioning.models import Cluster, NodePool

from .choices import DecisionArea, UpgradeStatus
from .models import DriverUpgradePlan, PlatformDecision
from .services import driver_upgrade_plan_record, platform_decision_record, platform_decision_sign_off

# (area, cluster, pool, value, owner, rationale, signer or None)
DECISIONS = [
    (DecisionArea.SCHEDULING_MODEL, "gpu-east", None, {"scheduling_model": "device_plugin"}, "platform-team",
     "Kubernetes 1.35 has DRAExtendedResource off by default, so moving to DRA means re-rendering every running "
     "pod with claims; we stay on the device plugin until the 1.36 upgrade.", "pat"),
    (DecisionArea.GANG_BACKEND, "gpu-east", None, {"gang_backend": "volcano"}, "platform-team",
     "Volcano is installed and its PodGroup is stable; the native Workload API is alpha on 1.35.", "quinn"),
    (DecisionArea.DRIVER_LIFECYCLE, "gpu-east", None, {}, "pat (GPU infrastructure)",
     "Drivers move one pool at a time in the monthly maintenance window, after the upgrade impact is checked.",
     "pat"),
    (DecisionArea.SCHEDULING_MODEL, "gpu-east", "h100-train", {"scheduling_model": "dra"}, "training-infra",
     "Training moves to DRA claims first; decided, not carried out yet (the register shows the conflict and what "
     "the move changes).", "quinn"),
    (DecisionArea.SCHEDULING_MODEL, "gpu-west", None, {"scheduling_model": "dra"}, "platform-team",
     "B200 nodes are handed out by the NVIDIA DRA driver; not signed off until the 1.36 gates are reviewed.", None),
]
UPGRADES = [
    # (cluster, pool, target version, days from today, note)
    ("gpu-east", "a100-mig-small", "570.124.06", 21, "Align the A100 pool with the H100 and H200 pools."),
]
DRAFT_NOTES = "Demo: latency-sensitive multi-tenant inference on whole GPUs instead of MIG slices"


def load_demo_register(*, users: dict) -> None:
    for area, cluster_name, pool_name, value, owner, rationale, signer in DECISIONS:
        cluster = Cluster.objects.get(name=cluster_name)
        pool = NodePool.objects.get(cluster=cluster, name=pool_name) if pool_name else None
        if PlatformDecision.objects.filter(area=area, cluster=cluster, pool=pool).exists():
            continue
        decision = platform_decision_record(user=users["pat"], area=area, cluster=cluster, pool=pool, value=value,
                                            owner=owner, rationale=rationale)
        if signer:
            platform_decision_sign_off(user=users[signer], decision_id=decision.pk)
    for cluster_name, pool_name, version, days, note in UPGRADES:
        cluster = Cluster.objects.get(name=cluster_name)
        pool = NodePool.objects.get(cluster=cluster, name=pool_name)
        if DriverUpgradePlan.objects.filter(cluster=cluster, pool=pool, target_version=version,
                                            status=UpgradeStatus.PLANNED).exists():
            continue
        driver_upgrade_plan_record(user=users["pat"], cluster=cluster, pool=pool, target_version=version,
                                   planned_for=timezone.now().date() + datetime.timedelta(days=days), note=note)
    if not PolicyVersion.objects.filter(notes=DRAFT_NOTES).exists() and \
            not PolicyVersion.objects.filter(status=PolicyStatus.DRAFT).exists():
        draft = policy_version_draft_create(user=users["quinn"], notes=DRAFT_NOTES)
        Rule.objects.filter(version=draft, key="inference-shared-latency").update(
            outcome={"strategy": "whole_gpu"},
            rationale="latency-sensitive inference gets a whole GPU: MIG slices were too small for the new models.",
        )

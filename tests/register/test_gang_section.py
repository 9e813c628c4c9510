"""Section 3, gang scheduling per cluster: given the declared backend, what discovery found installed and recorded
decisions, the register gives the verdict, the native Workload API's shape for the Kubernetes version, and, for
the multi-pod requests of the window, how many stalled and the GPU-hours their stalls burnt."""
from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from intake.models import GpuRequest
from provisioning.models import Cluster, GangStall
from register.choices import DecisionArea
from register.sections import gang
from register.services import platform_decision_record, platform_decision_sign_off
from kubesim import nodes as k
from tests.register.conftest import TRAINING, build_section, item, sync

pytestmark = pytest.mark.django_db
GANG = {**TRAINING, "replicas": 2}


def decide(user, backend, cluster="gpu-east"):
    decision = platform_decision_record(user=user, area=DecisionArea.GANG_BACKEND,
                                        cluster=Cluster.objects.get(name=cluster), value={"gang_backend": backend},
                                        owner="ml-platform", rationale="Volcano's PodGroup is stable.")
    return platform_decision_sign_off(user=user, decision_id=decision.pk)


def stall(gpu_request, *, started, ended, equivalents, now):
    return GangStall.objects.create(
        request=gpu_request, cluster=Cluster.objects.get(name=gpu_request.decision.cluster),
        workload_class="training", started_at=now - started, detected_at=now - started, segment_started_at=now - started,
        ended_at=now - ended if ended is not None else None, running_pods=1, pending_pods=1,
        gpu_equivalents_running=Decimal(equivalents))


def test_settings_nobody_signed_off_are_inherited_with_the_native_shape(inventory):
    section = build_section(gang)

    east, west = item(section, "gpu-east"), item(section, "gpu-west")
    assert (east["verdict"], east["state"]) == ("inherited", "Volcano (cluster setting); installed: not known (never "
                                                             "synced)")
    assert (west["verdict"], west["evidence"]["declared"]) == ("inherited", "native")
    assert west["evidence"]["native_api"] == {
        "api_version": "scheduling.k8s.io/v1alpha2", "kinds": ["Workload", "PodGroup"],
        "pod_field": "spec.schedulingGroup.podGroupName", "stage": "alpha", "on_by_default": False}
    assert ("Native gang on Kubernetes 1.36: scheduling.k8s.io/v1alpha2 Workload + PodGroup, pods join through "
            "spec.schedulingGroup.podGroupName (alpha, off by default: the API and its feature gates must be "
            "enabled).") in west["notes"]


@pytest.mark.parametrize("version, api_version, kinds", [
    ("1.35", "scheduling.k8s.io/v1alpha1", ["Workload"]),
    ("1.36", "scheduling.k8s.io/v1alpha2", ["Workload", "PodGroup"]),
    ("1.37", "scheduling.k8s.io/v1beta1", ["Workload", "PodGroup"]),
])
def test_native_api_shape_by_kubernetes_version(inventory, version, api_version, kinds):
    Cluster.objects.filter(name="gpu-west").update(kubernetes_version=version)
    shape = item(build_section(gang), "gpu-west")["evidence"]["native_api"]
    assert (shape["api_version"], shape["kinds"]) == (api_version, kinds)


def test_native_gang_on_1_34_is_a_conflict(inventory):
    Cluster.objects.filter(name="gpu-west").update(kubernetes_version="1.34")
    west = item(build_section(gang), "gpu-west")
    assert west["verdict"] == "conflict" and west["evidence"]["native_api"] is None
    assert west["evidence"]["conflicts"] == ["Declared the native Workload API on Kubernetes 1.34, which has none."]


def test_a_signed_off_backend_that_is_installed_is_decided(inventory, platform_user):
    decide(platform_user, "volcano")
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1")])
    east = item(build_section(gang), "gpu-east")
    assert (east["verdict"], east["owner"], east["signed_off_by"]) == ("decided", "ml-platform", "pat")
    assert east["state"] == "Volcano (cluster setting); installed: volcano (v1beta1)"


def test_a_declared_backend_that_is_not_installed_is_a_conflict(inventory, platform_user):
    decide(platform_user, "volcano")
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1")], gang_schedulers=[])
    east = item(build_section(gang), "gpu-east")
    assert east["verdict"] == "conflict"
    assert east["evidence"]["conflicts"] == [
        "Declared gang scheduler volcano is not installed (its API is not served); gangs rendered for it will be "
        "refused."]


def test_a_sign_off_the_cluster_setting_contradicts_is_a_conflict(inventory, platform_user):
    decision = decide(platform_user, "kueue")
    east = item(build_section(gang), "gpu-east")
    assert east["verdict"] == "conflict"
    assert east["evidence"]["conflicts"] == [
        f"Signed off Kueue (pat, {decision.signed_off_at:%Y-%m-%d}), but the cluster is set to Volcano."]


def test_multi_pod_requests_of_the_window_their_stalls_and_the_gpu_hours_burnt(inventory, engineer, team_a, place):
    stalled = place(engineer, team_a, "sweep", GANG)
    twice = place(engineer, team_a, "sweep-2", GANG)
    place(engineer, team_a, "sweep-3", GANG)
    place(engineer, team_a, "single", TRAINING)  # one pod: no gang
    old = place(engineer, team_a, "old-sweep", GANG)
    now = timezone.now()
    GpuRequest.objects.filter(pk=old.pk).update(created_at=now - datetime.timedelta(days=45))
    hour = datetime.timedelta(hours=1)
    stall(stalled, started=2 * hour, ended=hour, equivalents=8, now=now)  # 8 GPUs for 1 h: 8 GPU-hours
    stall(twice, started=4 * hour, ended=3 * hour, equivalents=8, now=now)  # 8 GPU-hours
    stall(twice, started=hour / 2, ended=None, equivalents=4, now=now)  # still open: 4 GPUs for 30 min so far
    stall(old, started=10 * hour, ended=9 * hour, equivalents=8, now=now)  # outside the window

    east = item(build_section(gang, now=now), "gpu-east")

    evidence = east["evidence"]
    assert (evidence["multi_pod_requests_in_window"], evidence["stalled_requests"], evidence["stalls"],
            evidence["open_stalls"], evidence["burnt_gpu_hours"]) == (3, 2, 3, 1, "18.000")
    assert east["notes"][-1] == ("3 multi-pod requests in the last 30 days; 2 stalled (3 stalls), 18.000 GPU-hours "
                                 "burnt while waiting.")
    assert item(build_section(gang, now=now), "gpu-west")["evidence"]["multi_pod_requests_in_window"] == 0


def test_what_holds_approval_is_said_per_cluster_and_made_or_inherited_with_the_backend(inventory, platform_user):
    Cluster.objects.filter(name="gpu-east").update(gang_scheduler="kueue", api_server="https://kube.example:6443")
    decide(platform_user, "kueue")

    section = build_section(gang)

    east, west = item(section, "gpu-east"), item(section, "gpu-west")
    assert east["evidence"]["approval_hold"] | {"text": ""} == {"held_by": "admission_check", "verdict": "decided",
                                                                "text": ""}
    assert ("Approval is enforced by the cluster: Kueue admits no Workload of the team queues until the portal's "
            "admission check gpu-portal-approval is Ready; a Job applied with kubectl waits in the approval queue as "
            "a request found in the cluster (decided with the signed-off gang backend).") in east["notes"]
    assert west["evidence"]["approval_hold"]["held_by"] == "portal_apply"
    assert ("Approval is held by the portal only: it applies after approval; native Workload API has no admission "
            "check the portal decides, so work applied with kubectl is not held (inherited from the cluster's gang "
            "backend setting: nobody signed it off).") in west["notes"]


def test_kueue_without_an_api_server_holds_approval_only_in_the_portal(inventory):
    Cluster.objects.filter(name="gpu-east").update(gang_scheduler="kueue", api_server="")
    hold = item(build_section(gang), "gpu-east")["evidence"]["approval_hold"]
    assert (hold["held_by"], hold["verdict"]) == ("portal_apply", "inherited")
    assert "has no API server for it" in hold["text"]


def test_a_kai_cluster_with_dra_mig_pools_is_told_kai_leaves_them_out_of_its_queues(inventory):
    # KAI v0.17.0 charges a claim to a queue only for DeviceClasses named *gpu* (pkg/common/resources/dra.go).
    from provisioning.inventory import cluster_declare

    cluster_declare(name="gpu-west", gang_scheduler="kai", pools=[
        {"name": "b200-mig", "gpu_model": "B200-180GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "mig",
         "mig_layout": "all-balanced"}])

    west, east = item(build_section(gang), "gpu-west"), item(build_section(gang), "gpu-east")

    assert west["evidence"]["kai_fair_share_gaps"] == ["b200-mig"]
    assert any("MIG slices from mig.nvidia.com are outside its KAI queue" in n and n.endswith("Pools: b200-mig.")
               for n in west["notes"])
    assert east["evidence"]["kai_fair_share_gaps"] == []

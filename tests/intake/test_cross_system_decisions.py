"""Where the decision meets several systems at once, over the preview API.

Given clusters the platform team declared (and the DeviceClasses inventory sync recorded), when an engineer previews
a request, then the decision says what the pods really get and keeps to what the cluster's systems can do:
- a time-sliced or MPS request on DRA is a whole GPU (each pod's claim holds its GPU alone), said so, uncapped and
  priced as one, and MPS keeps its claim (its MPS server lives there) on the extended-resource path;
- on Volcano a DRA request keeps its claim (Volcano fits extended resources against node allocatable only);
- Kueue packs no DRA gang by topology (no DRA + TAS), and a GB200 gang with no topology-aware gang is warned about;
- on KAI, DRA MIG slices are said to be outside the team's queue, whose GPU quota counts what KAI counts.
"""
from __future__ import annotations

import pytest

from intake.decisions import Decision

from intake.models import Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.models import Cluster

pytestmark = pytest.mark.django_db

GANG = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
        "gpus_per_replica": 1, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 16,
            "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
SERVE = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
         "gpu_memory_gb": 10, "image": "vllm/vllm-openai:v0.9.0"}
CLIQUE = "nvidia.com/gpu.clique"
# The NVIDIA chart's classes as inventory sync records them (dra-driver-nvidia-gpu v0.4.1 templates/deviceclass-*).
CHART_CLASSES = [{"name": "gpu.nvidia.com", "extended_resource_name": "nvidia.com/gpu"},
                 {"name": "mig.nvidia.com", "extended_resource_name": ""}]


def _dra_cluster(pool: dict, **fields) -> Cluster:
    fields = {"kubernetes_version": "1.36", "scheduling_model": "dra", "gang_scheduler": "kueue", "applier": "gitops",
              "gitops_repo": "/tmp/lab-repo", **fields}
    cluster = cluster_declare(name="lab", pools=[{"node_count": 2, "gpus_per_node": 8, **pool}], **fields)
    Cluster.objects.filter(pk=cluster.pk).update(dra_device_classes=CHART_CLASSES)
    return cluster


def _preview(api, engineer, answers, status=200):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "name": "job", "answers": answers},
                                  format="json")
    assert response.status_code == status, response.json()
    return response.json()


def _gpu_limits(manifests):
    """The pod's GPU limits: an extended resource served by DRA, or none when the pod holds a claim."""
    workload = next(m for m in manifests if m["kind"] in ("Job", "Deployment"))
    pod = workload["spec"]["template"]["spec"]
    limits = {k: v for k, v in pod["containers"][0]["resources"]["limits"].items() if k.startswith("nvidia.com/")}
    assert bool(limits) != bool(pod.get("resourceClaims"))
    return limits


def _reason(decision, field):
    return " ".join(r.text for r in decision.reasons if r.field == field)


def _sign_off(api, platform_user, rule_key, outcome):
    draft = policy_version_draft_create(user=platform_user, notes=f"{rule_key} changed")
    Rule.objects.filter(version=draft, key=rule_key).update(outcome=outcome)
    digest = policy_version_diff(version=draft).digest
    response = api(platform_user).post(f"/api/v1/policy/versions/{draft.number}/sign-off/", {"digest": digest},
                                       format="json")
    assert response.status_code == 200, response.json()


def test_a_time_sliced_request_on_dra_is_a_whole_gpu_and_says_so(api, engineer, team_a):
    _dra_cluster({"name": "l40s-ts", "gpu_model": "L40S-48GB", "sharing_mode": "time_slicing",
                  "time_slicing_replicas": 4}, gang_scheduler="none")

    decision = Decision.from_json(_preview(api, engineer, NOTEBOOK)["decision"])

    assert (decision.strategy, decision.memory_isolation) == ("time_slicing", "exclusive")
    assert decision.gpu_equivalents == 1.0
    assert "On DRA a time-sliced GPU share is a whole L40S-48GB: each pod's claim holds its GPU alone" in (
        _reason(decision, "scheduling_model"))
    assert decision.summary.startswith("A whole L40S-48GB (its processes time-sliced: a DRA share is a whole GPU)")


def test_an_mps_request_on_dra_is_an_uncapped_whole_gpu_and_keeps_its_claim(api, engineer, platform_user, team_a):
    _dra_cluster({"name": "h200-mps", "gpu_model": "H200-141GB", "sharing_mode": "mps", "time_slicing_replicas": 4},
                 gang_scheduler="none", dra_mps_support=True)
    _sign_off(api, platform_user, "development-standard", {"strategy": "mps", "auto_approve": True})

    body = _preview(api, engineer, NOTEBOOK)

    decision = Decision.from_json(body["decision"])
    # gpu.nvidia.com serves nvidia.com/gpu here (1.36), but that claim carries no MPS config: MPS keeps its claim.
    assert _gpu_limits(body["manifests"]) == {}
    assert (decision.memory_isolation, decision.memory_limit_gb, decision.gpu_equivalents) == (
        "exclusive", None, 1.0)
    reason = _reason(decision, "scheduling_model")
    assert "It keeps a claim: the driver's sharing settings live in the claim" in reason
    assert "an MPS server shares it between its own processes, with no per-client cap" in reason
    (template,) = [m for m in body["manifests"] if m["kind"] == "ResourceClaimTemplate"]
    assert template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"] == {
        "strategy": "MPS", "mpsConfig": {}}


def test_mps_on_dra_is_not_placed_where_kueue_admits_the_gang(api, engineer, platform_user, team_a):
    _dra_cluster({"name": "h200-mps", "gpu_model": "H200-141GB", "sharing_mode": "mps", "time_slicing_replicas": 4},
                 dra_mps_support=True)
    _sign_off(api, platform_user, "training-dedicated-batch", {"strategy": "mps", "gang": True})

    body = _preview(api, engineer, {**GANG, "gpu_memory_gb": 20}, status=400)

    assert "could not start an MPS server" in body["answers"]["replicas"][0]


@pytest.mark.parametrize(("gang_scheduler", "extended"), [("volcano", None), ("kueue", "nvidia.com/gpu")])
def test_on_volcano_a_dra_request_keeps_its_claim(api, engineer, team_a, gang_scheduler, extended):
    # Volcano v1.15.1 fits extended resources against node allocatable only, where DRA devices never appear.
    _dra_cluster({"name": "h200", "gpu_model": "H200-141GB", "sharing_mode": "exclusive"},
                 gang_scheduler=gang_scheduler)

    body = _preview(api, engineer, GANG)

    assert _gpu_limits(body["manifests"]) == ({extended: "1"} if extended else {})
    if extended is None:
        assert "It keeps a claim: Volcano v1.15.1 fits a pod's extended resources" in (
            _reason(Decision.from_json(body["decision"]), "scheduling_model"))
        (group,) = [m for m in body["manifests"] if m["kind"] == "PodGroup"]
        assert "nvidia.com/gpu" not in group["spec"]["minResources"]


def test_kueue_packs_no_dra_gang_by_topology_and_says_why(api, engineer, team_a):
    _dra_cluster({"name": "h200", "gpu_model": "H200-141GB", "sharing_mode": "exclusive"},
                 gang_topology_key=CLIQUE)

    body = _preview(api, engineer, GANG)

    assert Decision.from_json(body["decision"]).multi_node.topology is None
    assert "Kueue's topology-aware scheduling does not count DRA devices" in _reason(Decision.from_json(body["decision"]), "topology")
    job = next(m for m in body["manifests"] if m["kind"] == "Job")
    assert "kueue.x-k8s.io/podset-required-topology" not in job["spec"]["template"]["metadata"]["annotations"]


@pytest.mark.parametrize(("topology", "stalls"), [("", True), (CLIQUE, False)])
def test_a_gb200_gang_without_a_topology_aware_gang_is_warned_that_placement_can_stall(api, engineer, team_a,
                                                                                        topology, stalls):
    cluster_declare(name="nvl", kubernetes_version="1.36", gang_scheduler="kueue", applier="gitops",
                    gitops_repo="/tmp/nvl-repo", gang_topology_key=topology,
                    pools=[{"name": "gb200", "gpu_model": "GB200-186GB", "node_count": 18, "gpus_per_node": 4,
                            "sharing_mode": "exclusive", "nvlink_domain": "0f1e2d3c-4b5a-6978.1"}])

    decision = Decision.from_json(
        _preview(api, engineer, {**GANG, "gpus_per_replica": 4, "gpu_memory_gb": 600})["decision"])

    assert decision.multi_node.compute_domain is True
    assert decision.multi_node.placement_may_stall is stalls
    assert ("Warning: placement can stall" in _reason(decision, "compute_domain")) is stalls


def test_on_kai_dra_mig_slices_are_said_to_be_outside_the_teams_queue(api, engineer, team_a):
    _dra_cluster({"name": "h200-mig", "gpu_model": "H200-141GB", "sharing_mode": "mig", "mig_layout": "all-balanced"},
                 gang_scheduler="kai")

    decision = Decision.from_json(_preview(api, engineer, SERVE)["decision"])

    assert decision.strategy == "mig"
    assert "the team's MIG slices from mig.nvidia.com are outside its KAI queue" in (
        _reason(decision, "scheduling_model"))


def test_the_kai_queue_quota_counts_what_kai_counts_on_a_mixed_cluster(api, engineer, team_a):
    # Device-plugin whole GPUs and gpu.nvidia.com claims both reach KAI's queue; mig.nvidia.com never does
    # (KAI v0.17.0 pkg/common/resources/dra.go IsGPUDeviceClass).
    cluster = cluster_declare(name="mixed", kubernetes_version="1.35", gang_scheduler="kai", applier="gitops",
                              gitops_repo="/tmp/mixed-repo", pools=[
        {"name": "h100", "gpu_model": "H100-80GB", "node_count": 2, "gpus_per_node": 8, "sharing_mode": "exclusive"},
        {"name": "l40s-ts", "gpu_model": "L40S-48GB", "node_count": 1, "gpus_per_node": 4,
         "sharing_mode": "time_slicing", "time_slicing_replicas": 4, "scheduling_model": "dra"},
        {"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "mig",
         "mig_layout": "all-balanced", "scheduling_model": "dra"}])  # fmt: skip
    assert cluster.pools.count() == 3
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=16)
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=2)
    team_quota_set(team=team_a, strategy="mig", gpu_equivalents=2)

    manifests = _preview(api, engineer, GANG)["manifests"]

    (queue,) = [m for m in manifests if m["kind"] == "Queue"]
    (quota,) = [m for m in manifests if m["kind"] == "ResourceQuota"]
    assert quota["spec"]["hard"]["mig.nvidia.com.deviceclass.resource.k8s.io/devices"] == "14"
    # 16 device-plugin GPUs + 2 time-sliced gpu.nvidia.com claims; not the 14 MIG devices.
    assert queue["spec"]["resources"]["gpu"]["quota"] == 18

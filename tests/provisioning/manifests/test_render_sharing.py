"""How the public renderer shares GPUs that schedule on real clusters: MPS pods pinned to MPS nodes (GFD labels
from k8s-device-plugin v0.20.0), MPS through the NVIDIA DRA driver only where the cluster declares its gate."""

from __future__ import annotations

from dataclasses import replace

import pytest

from provisioning.manifests import RenderError, render, render_all, validate_objects

from .matrix import cases

CASES = {case.id: case for case in cases()}


def _render(case_id, request_changes=None, cluster_changes=None, pool_changes=None):
    case = CASES[case_id]
    cluster = case.cluster
    if pool_changes:
        cluster = replace(cluster, pool=replace(cluster.pool, **pool_changes))
    cluster = replace(cluster, **(cluster_changes or {}))
    return render(replace(case.request, **(request_changes or {})), cluster)


def _pod(objects):
    (workload,) = [o for o in objects if o["kind"] in ("Job", "Deployment")]
    return workload["spec"]["template"]


def test_an_mps_pod_asks_for_one_share_on_nodes_gfd_labels_mps():
    pod = _pod(_render("mps-device_plugin-none-1.36-development-plain"))["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    assert pod["nodeSelector"]["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert pod["nodeSelector"]["nvidia.com/device-plugin.config"] == "mps-4"
    assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200"


def test_an_mps_pod_without_rename_asks_for_nvidia_com_gpu_on_the_shared_product():
    pod = _pod(_render("mps-device_plugin-none-1.36-development-plain", pool_changes={"time_slicing_renamed": False}))
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"memory": "16Gi", "nvidia.com/gpu": "1"}
    assert pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200-SHARED"


def test_a_time_sliced_pod_is_still_pinned_to_time_slicing_nodes():
    pod = _pod(_render("ts_renamed-device_plugin-none-1.36-development-plain"))["spec"]
    assert pod["nodeSelector"]["nvidia.com/gpu.sharing-strategy"] == "time-slicing"


def test_more_than_one_mps_share_per_pod_is_refused_on_the_device_plugin():
    with pytest.raises(RenderError, match="failRequestsGreaterThanOne defaults to true for MPS"):
        _render("mps-device_plugin-none-1.36-inference-plain", request_changes={"gpus_per_replica": 2})


def test_mps_through_dra_gives_each_pod_a_claim_with_an_uncapped_mps_server():
    # A claim per pod, as every DRA request (Kueue refuses named claims; a shared claim pins replicas to one node).
    # The claim holds its GPU alone (driver v0.4.1: no allowMultipleAllocations), so capping its client at 1/replicas
    # of the threads and memory would leave three quarters of a GPU the team pays for idle.
    objects = _render("mps-dra-none-1.36-inference-plain")
    validate_objects(objects, "1.36")
    assert not [o for o in objects if o["kind"] == "ResourceClaim"]
    (template,) = [o for o in objects if o["kind"] == "ResourceClaimTemplate"]
    (config,) = template["spec"]["spec"]["devices"]["config"]
    assert config["opaque"]["parameters"]["sharing"] == {"strategy": "MPS", "mpsConfig": {}}
    assert _pod(objects)["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]


@pytest.mark.parametrize("case_id", ["mps-device_plugin-none-1.36-inference-plain",
                                     "mps-device_plugin-volcano-1.35-training_gang-plain",
                                     "mps-dra-none-1.36-development-plain"])
def test_an_mps_pod_leaves_dev_shm_to_the_mps_daemon(case_id):
    # The device plugin (internal/plugin/mps.go) and the DRA driver (cmd/gpu-kubelet-plugin/sharing.go) mount the
    # MPS daemon's shared memory at /dev/shm; a memory emptyDir of the pod's own there would hide it.
    pod = _pod(_render(case_id))["spec"]
    assert "volumes" not in pod and "volumeMounts" not in pod["containers"][0]


@pytest.mark.parametrize("case_id", ["ts_renamed-device_plugin-none-1.36-inference-plain",
                                     "whole_gpu-dra-none-1.36-inference-plain"])
def test_other_pods_keep_a_dev_shm_of_their_own(case_id):
    pod = _pod(_render(case_id))["spec"]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert pod["volumes"][0]["emptyDir"]["medium"] == "Memory"


def test_mps_on_dra_is_refused_for_a_kueue_gang_which_takes_no_claim_config():
    with pytest.raises(RenderError, match="could not start an MPS server"):
        _render("mps-dra-kueue-1.36-training_gang-plain")


@pytest.mark.parametrize(("case_id", "words"), [
    ("whole_gpu-dra-volcano-1.36-training_gang-plain", "Volcano v1.15.1 fits a pod's extended resources"),
    ("whole_gpu-dra-volcano-1.36-inference-plain", "Volcano v1.15.1 fits a pod's extended resources"),
    ("mps-dra-none-1.36-inference-plain", "carries no sharing config"),
])
def test_the_dra_extended_resource_path_is_refused_where_it_cannot_work(case_id, words):
    # Volcano accounts scalar resources from node allocatable only (node_info.go); the claim the scheduler makes for
    # an extended resource carries no MPS config, so MPS would silently become a plain whole GPU.
    with pytest.raises(RenderError, match=words):
        _render(case_id, request_changes={"dra_extended_resource": "nvidia.com/gpu"},
                cluster_changes={"dra_extended_resources": ("nvidia.com/gpu",)})


def test_mps_through_dra_is_refused_where_the_cluster_does_not_declare_the_drivers_gate():
    with pytest.raises(RenderError, match="MPSSupport"):
        _render("mps-dra-none-1.36-inference-plain", cluster_changes={"dra_mps_support": False})


# --- who schedules pods that need no gang -------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["inference", "development", "training_single"])
def test_pods_without_a_gang_on_a_volcano_cluster_use_volcano_and_the_teams_queue(shape):
    pod = _pod(_render(f"whole_gpu-device_plugin-volcano-1.36-{shape}-plain"))
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "gpu-ml-research"
    assert "scheduling.k8s.io/group-name" not in pod["metadata"]["annotations"]  # Volcano makes a group of one


@pytest.mark.parametrize("shape", ["inference", "development", "training_single"])
def test_pods_without_a_gang_on_a_kai_cluster_use_kai_and_the_teams_queue(shape):
    objects = _render(f"mig_mixed-device_plugin-kai-1.37-{shape}-plain")
    pod = _pod(objects)
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "gpu-ml-research"
    # KAI's pod-grouper groups these pods itself (no PodGroup of ours, no skip-podgrouper).
    assert "kai.scheduler/skip-podgrouper" not in pod["metadata"]["annotations"]
    assert not [o for o in objects if o["kind"] == "PodGroup"]


def test_a_cluster_whose_gang_scheduler_has_gpu_nodes_of_its_own_leaves_other_pods_to_the_default_scheduler():
    pod = _pod(_render("whole_gpu-device_plugin-volcano-1.36-inference-plain",
                       cluster_changes={"gang_scheduler_owns_gpu_nodes": False}))
    assert "schedulerName" not in pod["spec"]
    assert "scheduling.volcano.sh/queue-name" not in pod["metadata"]["annotations"]


@pytest.mark.parametrize("backend", ["kueue", "native", "none"])
def test_backends_that_use_the_default_scheduler_add_no_scheduler_name(backend):
    assert "schedulerName" not in _pod(_render(f"whole_gpu-device_plugin-{backend}-1.36-inference-plain"))["spec"]


# --- MIG readiness ---------------------------------------------------------------------------------------------


def _node_expressions(pod):
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (term,) = terms  # one term: its expressions are ANDed
    return term["matchExpressions"]


@pytest.mark.parametrize("case_id", ["mig_mixed-device_plugin-none-1.36-inference-plain",
                                     "mig_single-device_plugin-none-1.36-inference-plain",
                                     "mig_mixed-device_plugin-volcano-1.35-training_gang-shared_driver"])
def test_mig_pods_only_land_on_nodes_whose_layout_mig_manager_finished(case_id):
    expressions = _node_expressions(_pod(_render(case_id)))
    assert {"key": "nvidia.com/mig.config.state", "operator": "In", "values": ["success"]} in expressions


def test_the_readiness_requirement_joins_the_driver_floor_in_one_term():
    expressions = _node_expressions(_pod(_render("mig_mixed-device_plugin-none-1.36-inference-shared_driver")))
    assert [e["key"] for e in expressions] == ["nvidia.com/mig.config.state", "nvidia.com/cuda.driver-version.major"]


@pytest.mark.parametrize("case_id", ["whole_gpu-device_plugin-none-1.36-inference-plain",
                                     "mig_mixed-dra-none-1.36-inference-plain"])
def test_whole_gpus_and_dra_mig_devices_need_no_mig_manager_label(case_id):
    assert "affinity" not in _pod(_render(case_id))["spec"]


@pytest.mark.parametrize("case_id", ["mig_mixed-device_plugin-none-1.36-inference-plain",
                                     "mig_single-device_plugin-kai-1.36-inference-shared_driver"])
def test_statically_configured_mig_nodes_are_not_held_on_mig_managers_label(case_id):
    # Only mig-manager writes nvidia.com/mig.config.state (mig-parted v0.15.0 reconfigure-mig.sh): a pool whose MIG
    # layout is static (declared, or no node carries the label) must not require it, or nothing schedules there.
    from tests.support.semantic import assert_schedulable, check

    from .inventory import admitted_for, build_inventory

    case = CASES[case_id]
    static = replace(case.cluster, pool=replace(case.cluster.pool, mig_ready_label=False))
    inventory, admitted = build_inventory(static), admitted_for(case.team, case.request)
    assert all("nvidia.com/mig.config.state" not in n["metadata"]["labels"] for n in inventory.nodes)

    objects = render_all(case.team, case.request, static)

    expressions = [e["key"] for term in _pod(objects)["spec"].get("affinity", {}).get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []) for e in term["matchExpressions"]]
    assert "nvidia.com/mig.config.state" not in expressions
    assert_schedulable(objects, inventory, admitted)
    # Rendered as for a mig-manager pool, the same pods would land nowhere: the node-selection rule says so.
    assert check(render_all(case.team, case.request, case.cluster), inventory, admitted).rules() == {"node-selection"}

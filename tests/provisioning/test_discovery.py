"""Discovery as pure functions: given realistic Node objects (GFD labels, device-plugin resources, DRA
ResourceSlices), when they are parsed, grouped and compared with declared pools, then the facts, the pools and the
discrepancies are what the reference says the cluster means."""
from __future__ import annotations

import pytest

from gpu.catalogue import load_catalogue
from gpu.pools import PoolSpec
from provisioning.discovery import (
    NodeCapacityRow,
    capacity_by_strategy,
    cluster_discrepancies,
    dra_device_keys,
    dra_devices_by_node,
    group_nodes,
    parse_node,
    parse_pods,
    pool_discrepancies,
    pool_name,
    summarise_pool,
    usable_for,
)
from kubesim import nodes as k

CATALOGUE = load_catalogue()


def facts(node, slices=()):
    devices = dra_devices_by_node(slices)
    return parse_node(node, catalogue=CATALOGUE, dra_devices=devices.get(node["metadata"]["name"], ()))


# --- parsing nodes -----------------------------------------------------------------------------------------------


def test_h100_exclusive_node():
    f = facts(k.h100_node("gpu-1"))
    assert (f.gpu_model, f.gpu_count, f.sharing_mode, f.scheduling_model) == ("H100-80GB", 8, "exclusive", "device_plugin")
    assert (f.driver_version, f.driver_major, f.clique) == ("570.124.06", 570, k.H100_CLIQUE)
    assert f.gpu_resources == {"nvidia.com/gpu": 8}
    assert f.taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)
    assert f.portal_pool == "h100-train" and f.mig_capable and f.mig_config == "all-disabled"


def test_h200_mixed_mig_all_balanced_advertises_each_profile():
    f = facts(k.h200_mig_node("gpu-2"))
    assert f.sharing_mode == "mig" and f.mig_strategy == "mixed" and f.mig_config == "all-balanced"
    assert f.mig_devices == {"1g.18gb": 16, "2g.35gb": 8, "3g.71gb": 8}
    assert f.gpu_resources["nvidia.com/mig-1g.18gb"] == 16
    assert (f.gpu_count, f.mig_config_state) == (8, "success")


def test_a100_all_1g_10gb():
    f = facts(k.a100_mig_node("gpu-3"))
    assert (f.gpu_model, f.mig_devices, f.driver_major) == ("A100-80GB", {"1g.10gb": 56}, 550)


def test_l40s_time_sliced_and_renamed():
    f = facts(k.l40s_shared_node("gpu-4"))
    assert (f.sharing_mode, f.gpu_replicas, f.gpu_count, f.time_slicing_renamed) == ("time_slicing", 4, 4, True)
    assert f.gpu_resources == {"nvidia.com/gpu.shared": 16} and f.device_plugin_config == "ts-4"


def test_time_sliced_without_rename_advertises_nvidia_com_gpu():
    node = k.l40s_shared_node("gpu-5")
    node["status"]["allocatable"] = {"nvidia.com/gpu": "16"}
    f = facts(node)
    assert (f.sharing_mode, f.time_slicing_renamed, f.gpu_count) == ("time_slicing", False, 4)


def test_b200_on_dra_is_read_from_its_resource_slice():
    f = facts(k.b200_dra_node("gpu-6"), [k.resource_slice("gpu-6")])
    assert (f.gpu_model, f.gpu_count, f.scheduling_model, f.sharing_mode) == ("B200-180GB", 8, "dra", "exclusive")
    assert f.gpu_resources == {"gpu.nvidia.com/gpu": 8}
    assert f.dra_devices[0]["product_name"] == "NVIDIA B200" and f.dra_devices[0]["driver_version"] == "580.65.6"


def test_dra_only_node_without_gfd_labels_takes_model_and_driver_from_the_slice():
    node = k.b200_dra_node("gpu-7")
    node["metadata"]["labels"] = {"kubernetes.io/hostname": "gpu-7"}
    f = facts(node, [k.resource_slice("gpu-7")])
    assert (f.is_gpu_node, f.gpu_model, f.driver_version, f.driver_major) == (True, "B200-180GB", "580.65.6", 580)


def test_dra_mig_devices_count_per_profile_and_parent_gpus():
    f = facts(k.b200_dra_node("gpu-8"), [k.resource_slice("gpu-8", gpus=2, mig={"1g.23gb": 7})])
    assert f.mig_devices == {"1g.23gb": 14} and f.sharing_mode == "mig"
    assert f.gpu_resources == {"gpu.nvidia.com/mig-1g.23gb": 14}


def test_only_the_newest_slice_generation_counts():
    old, new = k.resource_slice("gpu-9", gpus=8, generation=1), k.resource_slice("gpu-9", gpus=4, generation=2)
    new["metadata"]["name"] += "-b"
    assert facts(k.b200_dra_node("gpu-9"), [old, new]).gpu_resources == {"gpu.nvidia.com/gpu": 4}


def test_device_plugin_and_dra_on_one_node_is_a_conflict():
    node = k.b200_dra_node("gpu-10")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    assert facts(node, [k.resource_slice("gpu-10")]).scheduling_model == "both"


def test_mig_single_strategy_counts_slices_as_nvidia_com_gpu():
    node = k.gpu_node("gpu-11", model="H200-141GB", gpu_resources={"nvidia.com/gpu": 56}, taints=[],
                      extra_labels={"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.18gb",
                                    "nvidia.com/gpu.product": "NVIDIA-H200-MIG-1g.18gb", "nvidia.com/gpu.count": "56"})
    f = facts(node)
    assert (f.gpu_model, f.sharing_mode, f.mig_devices, f.gpu_count) == ("H200-141GB", "mig", {"1g.18gb": 56}, 8)


def test_mig_layout_pending_without_devices_yet_is_still_a_mig_node():
    node = k.h200_mig_node("gpu-12", state="pending")
    node["status"]["allocatable"] = {k_: v for k_, v in node["status"]["allocatable"].items() if "nvidia" not in k_}
    node["metadata"]["labels"] = {k_: v for k_, v in node["metadata"]["labels"].items() if ".count" not in k_ or
                                  k_ == "nvidia.com/gpu.count"}
    f = facts(node)
    assert (f.sharing_mode, f.mig_devices, f.mig_config_state) == ("mig", {}, "pending")


def test_cordoned_node_and_cpu_node():
    assert facts(k.h100_node("gpu-13", unschedulable=True)).unschedulable
    assert not facts(k.cpu_node("cpu-1")).is_gpu_node


def test_unknown_product_has_no_model():
    node = k.h100_node("gpu-14")
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-RTX-PRO-6000-Blackwell"
    f = facts(node)
    assert f.is_gpu_node and f.gpu_model is None


# --- pods --------------------------------------------------------------------------------------------------------


def test_pods_hold_extended_resources_and_dra_devices_through_their_claims():
    slices = [k.resource_slice("gpu-b")]
    dra_pod = k.gpu_pod("dra", node="gpu-b", claims=["gpu"], request_id=7)
    init = k.gpu_pod("init", node="gpu-a", resources={"nvidia.com/gpu": 2})
    init["spec"]["initContainers"] = [{"name": "warm", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]
    done = k.gpu_pod("done", node="gpu-a", phase="Succeeded", resources={"nvidia.com/gpu": 8})
    claim = k.allocated_claim("c", namespace="gpu-team-a", node="gpu-b", devices=["gpu-0", "gpu-3"], pod=dra_pod)

    pods = parse_pods([dra_pod, init, done], claims=[claim], dra_device_keys=dra_device_keys(dra_devices_by_node(slices)))

    by_name = {p.name: p for p in pods}
    assert set(by_name) == {"dra", "init"}
    assert by_name["dra"].resources == {"gpu.nvidia.com/gpu": 2} and by_name["dra"].request_id == 7
    assert by_name["init"].resources == {"nvidia.com/gpu": 4}  # the larger of init (4) and containers (2)


# --- grouping ----------------------------------------------------------------------------------------------------

H100_POOL = PoolSpec(name="h100-train", gpu_model="H100-80GB", node_count=2, gpus_per_node=8,
                         sharing_mode="exclusive", driver_version="570.124.06", nvlink_domain=k.H100_CLIQUE,
                         node_selector={"gpu-portal.io/pool": "h100-train"})
H200_POOL = PoolSpec(name="h200-mig", gpu_model="H200-141GB", node_count=2, gpus_per_node=8, sharing_mode="mig",
                         mig_layout="all-balanced", node_selector={"gpu-portal.io/pool": "h200-mig"})


def test_nodes_go_to_the_declared_pool_their_labels_select_and_the_rest_are_grouped():
    nodes = [facts(n) for n in (
        k.h100_node("h100-1"), k.h100_node("h100-2"),
        k.h200_mig_node("h200-1", pool=None), k.h200_mig_node("h200-2", pool=None),
        k.h200_mig_node("h200-3", pool=None, layout="all-1g.18gb"),
        k.l40s_shared_node("l40s-1", pool="notebooks"), k.cpu_node("cpu-1"),
    )]  # fmt: skip

    grouping = group_nodes(nodes, [H100_POOL])

    assert [n.name for n in grouping.declared["h100-train"]] == ["h100-1", "h100-2"]
    groups = {g.name: [n.name for n in g.nodes] for g in grouping.discovered}
    assert groups == {
        "h200-141gb-mig-all-balanced": ["h200-1", "h200-2"],
        "h200-141gb-mig-all-1g-18gb": ["h200-3"],
        "notebooks": ["l40s-1"],  # the portal's own pool label names the group
    }
    balanced = next(g for g in grouping.discovered if g.name == "h200-141gb-mig-all-balanced")
    assert balanced.node_selector == {"nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/mig.config": "all-balanced"}
    assert next(g for g in grouping.discovered if g.name == "notebooks").node_selector == {"gpu-portal.io/pool": "notebooks"}


def test_a_declared_pool_without_selector_takes_nodes_labelled_with_its_name():
    pool = PoolSpec(name="h100-train", gpu_model="H100-80GB", node_count=1, gpus_per_node=8,
                        sharing_mode="exclusive")
    assert [n.name for n in group_nodes([facts(k.h100_node("h100-1"))], [pool]).declared["h100-train"]] == ["h100-1"]


def test_overlapping_selectors_pick_the_most_specific_and_are_flagged():
    wide = PoolSpec(name="all-h100", gpu_model="H100-80GB", node_count=1, gpus_per_node=8,
                        sharing_mode="exclusive", node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    narrow = PoolSpec(name="h100-train", gpu_model="H100-80GB", node_count=1, gpus_per_node=8,
                          sharing_mode="exclusive", node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                                                   "gpu-portal.io/pool": "h100-train"})
    grouping = group_nodes([facts(k.h100_node("h100-1"))], [wide, narrow])
    assert grouping.declared == {"all-h100": [], "h100-train": [grouping.declared["h100-train"][0]]}
    assert grouping.overlaps["all-h100"] == [("h100-1", "h100-train")]


def test_a_discovered_name_never_takes_a_declared_pools_name():
    declared = PoolSpec(name="h100-80gb", gpu_model="H100-80GB", node_count=1, gpus_per_node=8,
                            sharing_mode="exclusive", node_selector={"rack": "r1"})
    grouping = group_nodes([facts(k.h100_node("h100-1", pool=None))], [declared])
    assert [g.name for g in grouping.discovered] == ["h100-80gb-discovered"]


def test_unknown_gpus_are_not_pooled():
    node = k.h100_node("odd-1", pool=None)
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-Unknown"
    grouping = group_nodes([facts(node)], [])
    assert grouping.discovered == [] and [n.name for n in grouping.unpooled] == ["odd-1"]


def test_pool_names_are_dns_labels_of_at_most_40_characters():
    assert pool_name("H200-141GB", "mig-all-1g.18gb.me") == "h200-141gb-mig-all-1g-18gb-me"
    long = pool_name("H200-141GB", "mig-" + "x" * 60)
    assert len(long) == 40 and long.startswith("h200-141gb-mig-xxx")


# --- summaries and discrepancies ---------------------------------------------------------------------------------


def test_summary_offers_the_profiles_the_nodes_advertise_and_the_lowest_driver():
    nodes = [facts(k.h200_mig_node("h200-1", driver="570.124.06")),
             facts(k.h200_mig_node("h200-2", layout="all-1g.18gb", driver="550.90.07"))]
    summary = summarise_pool(H200_POOL, nodes, CATALOGUE)
    assert summary["mig_profiles"] == {"1g.18gb": 7, "2g.35gb": 1, "3g.71gb": 1}
    assert summary["mig_devices"] == {"1g.18gb": 72, "2g.35gb": 8, "3g.71gb": 8}
    assert (summary["min_driver_version"], summary["min_driver_major"]) == ("550.90.07", 550)
    assert summary["usable_node_count"] == 2 and summary["gpu_product"] == "NVIDIA-H200"


def test_discrepancies_name_each_field_with_declared_and_discovered_values():
    nodes = [
        facts(k.h200_mig_node("h200-1", driver="570.124.06")),
        facts(k.h200_mig_node("h200-2", layout="all-1g.18gb", driver="580.65.06")),
        facts(k.h200_mig_node("h200-3", gpus=4)),
    ]
    pool = PoolSpec(**{**H200_POOL.__dict__, "driver_version": "570.124.06"})

    found = {d["field"]: d for d in pool_discrepancies(pool, nodes, CATALOGUE)}

    assert found["node_count"]["declared"] == 2 and found["node_count"]["discovered"] == 3
    assert found["mig_layout"]["discovered"] == ["all-1g.18gb", "all-balanced"]
    assert found["mig_layout"]["message"] == "h200-mig declares layout all-balanced; the layout on h200-2 is all-1g.18gb."
    assert found["gpus_per_node"]["discovered"] == [4, 8]
    assert found["driver_version"]["discovered"] == ["570.124.06", "580.65.06"]
    assert "gpu_model" not in found and "sharing_mode" not in found


def test_model_mode_replicas_and_the_dual_scheduling_conflict_are_flagged():
    l40s = PoolSpec(name="shared", gpu_model="L40S-48GB", node_count=1, gpus_per_node=4,
                        sharing_mode="time_slicing", time_slicing_replicas=8)
    found = {d["field"]: d for d in pool_discrepancies(l40s, [facts(k.l40s_shared_node("l-1"))], CATALOGUE)}
    assert found["time_slicing_replicas"]["declared"] == 8 and found["time_slicing_replicas"]["discovered"] == [4]

    b200 = PoolSpec(name="b200", gpu_model="H100-80GB", node_count=1, gpus_per_node=8, sharing_mode="exclusive",
                        scheduling_model="dra")
    conflict = k.b200_dra_node("b-1")
    conflict["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    found = {d["field"]: d for d in pool_discrepancies(b200, [facts(conflict, [k.resource_slice("b-1")])], CATALOGUE)}
    assert found["gpu_model"]["discovered"] == ["B200-180GB"]
    assert found["scheduling_model"]["message"].startswith("Conflict: on b-1 both the device plugin")
    assert found["placement"]["discovered"] == "none"


def test_a_node_serves_a_pool_only_in_the_mode_and_naming_it_is_rendered_for():
    assert usable_for(H200_POOL, facts(k.h200_mig_node("h-1")))
    assert not usable_for(H200_POOL, facts(k.h100_node("h-2")))  # exclusive, not MIG
    single = PoolSpec(**{**H200_POOL.__dict__, "mig_strategy": "single"})
    assert not usable_for(single, facts(k.h200_mig_node("h-3")))  # GFD says mixed


def test_cluster_discrepancies():
    found = cluster_discrepancies(declared_version="1.35", discovered_version="v1.36.1", declared_gang="kai",
                                  installed_gang=["volcano"], declared_scheduling="device_plugin", dra_in_use=True,
                                  unpooled=[])
    assert [d["field"] for d in found] == ["kubernetes_version", "gang_scheduler", "scheduling_model"]
    assert found[1]["message"].startswith("Declared gang scheduler kai is not installed")
    assert cluster_discrepancies(declared_version="1.36", discovered_version="v1.36.1", declared_gang="volcano",
                                 installed_gang=["volcano"], declared_scheduling="device_plugin", dra_in_use=False,
                                 unpooled=[]) == []


# --- capacity ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row, expected", [
    (NodeCapacityRow("a", "H100-80GB", "exclusive", 1, {"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 6}),
     {"whole_gpu": {"devices_total": 8, "devices_used": 6, "devices_free": 2, "equivalents_total": 8.0,
                    "equivalents_used": 6.0, "equivalents_free": 2.0}}),
    (NodeCapacityRow("b", "L40S-48GB", "time_slicing", 4, {"nvidia.com/gpu.shared": 16}, {"nvidia.com/gpu.shared": 1}),
     {"time_slicing": {"devices_total": 16, "devices_used": 1, "devices_free": 15, "equivalents_total": 4.0,
                       "equivalents_used": 0.25, "equivalents_free": 3.75}}),
    (NodeCapacityRow("c", "H100-80GB", "exclusive", 1, {"nvidia.com/gpu": 8}, {}, schedulable=False),
     {"whole_gpu": {"devices_total": 8, "devices_used": 0, "devices_free": 0, "equivalents_total": 8.0,
                    "equivalents_used": 0.0, "equivalents_free": 0.0}}),
])  # fmt: skip
def test_capacity_by_strategy(row, expected):
    assert capacity_by_strategy([row], CATALOGUE) == expected


def test_mig_capacity_is_broken_down_by_profile_in_compute_fractions():
    row = NodeCapacityRow("h", "H200-141GB", "mig", 0,
                          {"nvidia.com/mig-1g.18gb": 16, "nvidia.com/mig-3g.71gb": 8}, {"nvidia.com/mig-3g.71gb": 1})
    mig = capacity_by_strategy([row], CATALOGUE)["mig"]
    assert mig["profiles"] == {"1g.18gb": {"total": 16, "used": 0, "free": 16}, "3g.71gb": {"total": 8, "used": 1,
                                                                                             "free": 7}}
    assert mig["equivalents_total"] == round(16 / 7 + 8 * 3 / 7, 3) and mig["equivalents_used"] == round(3 / 7, 3)

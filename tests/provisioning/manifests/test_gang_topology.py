"""A gang is packed into one NVLink domain / rack in the shape of the cluster's gang backend.

Given a cluster that declares a gang topology (a node label key, and for KAI and Volcano the Topology object or
HyperNode tier), when a gang-scheduled training request is rendered, then Kueue gets the required-topology
annotation on the pod template, KAI a topologyConstraint on its PodGroup, Volcano a hard networkTopology, and the
native API (1.36+, with its gate) schedulingConstraints.topology; all valid for the cluster's version. A topology
the backend cannot honour renders no constraint.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from provisioning.manifests import render, validate_objects

from .matrix import NATIVE_GATES, cases

CASES = {case.id: case for case in cases()}
CLIQUE = "nvidia.com/gpu.clique"


def _render(backend, version, model="device_plugin", **cluster_changes):
    case = CASES[f"whole_gpu-{model}-{backend}-{version}-training_gang-plain"]
    objects = render(case.request, replace(case.cluster, **cluster_changes))
    assert validate_objects(objects, version) == len(objects)
    return objects


def _kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def test_kueue_requires_one_domain_of_the_level_for_the_pod_set():
    (job,) = _kind(_render("kueue", "1.36", gang_topology_key=CLIQUE), "Job")
    assert job["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] == CLIQUE


def test_kai_pod_group_gets_a_required_topology_level():
    (group,) = _kind(_render("kai", "1.35", gang_topology_key=CLIQUE, gang_topology_name="gpu-fabric"), "PodGroup")
    assert group["spec"]["topologyConstraint"] == {"topology": "gpu-fabric", "requiredTopologyLevel": CLIQUE}


def test_volcano_pod_group_stays_inside_one_hypernode_tier():
    (group,) = _kind(_render("volcano", "1.37", gang_topology_name="nvlink"), "PodGroup")
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierName": "nvlink"}


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_native_pod_group_and_template_carry_the_topology_constraint(version):
    gates = (*NATIVE_GATES[version], "TopologyAwareWorkloadScheduling")
    objects = _render("native", version, gang_topology_key=CLIQUE, feature_gates=gates)
    (workload,) = _kind(objects, "Workload")
    (group,) = _kind(objects, "PodGroup")
    assert workload["spec"]["podGroupTemplates"][0]["schedulingConstraints"] == {"topology": [{"key": CLIQUE}]}
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": CLIQUE}]}


def test_native_without_the_topology_gate_renders_no_constraint():
    objects = _render("native", "1.36", gang_topology_key=CLIQUE)
    assert all("schedulingConstraints" not in o["spec"] for o in _kind(objects, "PodGroup"))


def test_no_declared_topology_no_constraint():
    (group,) = _kind(_render("kai", "1.36"), "PodGroup")
    assert "topologyConstraint" not in group["spec"]


def test_kueue_packs_no_dra_gang_by_topology():
    # Kueue v0.19.2 does not count DRA devices in a topology domain's capacity ("No DRA + TAS"): it would choose the
    # domain without looking at free GPUs. The decision's topology reason says so (gangapi.topology_refusal).
    (job,) = _kind(_render("kueue", "1.36", model="dra", gang_topology_key=CLIQUE), "Job")
    assert "kueue.x-k8s.io/podset-required-topology" not in job["spec"]["template"]["metadata"]["annotations"]

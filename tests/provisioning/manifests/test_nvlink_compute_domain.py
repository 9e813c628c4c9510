"""Multi-node NVLink (GB200 NVL72): a ComputeDomain and its IMEX channel claim, inside one clique.

Given a pool of GB200 nodes on an NVLink fabric, when a gang-scheduled training request is rendered, then it gets a
ComputeDomain of its own whose channel ResourceClaimTemplate every pod references, owned by its Job and with all
pods required in one `nvidia.com/gpu.clique`; tenant-exclusive isolation gives even a single-pod service its own
ComputeDomain; a single-node NVLink GPU (H200) gets none. Objects are valid (ComputeDomain against its CRD).
Through the preview API the decision says why.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from intake.decisions import Decision
from provisioning.inventory import cluster_declare
from provisioning.manifests import render, validate_objects

from .matrix import cases

CASES = {case.id: case for case in cases()}
CLIQUE = "nvidia.com/gpu.clique"
GB200 = {"gpu_product": "NVIDIA-GB200", "nvlink_domain": "7b968a6d-1c2e.1", "multinode_nvlink": True}


def _render(case_id, pool_changes, **request_changes):
    case = CASES[case_id]
    request = replace(case.request, **({"gpu_product": "NVIDIA-GB200", "dra_product_name": "NVIDIA GB200"}
                                       | request_changes))
    cluster = replace(case.cluster, pool=replace(case.cluster.pool, **pool_changes))
    objects = render(request, cluster)
    assert validate_objects(objects, cluster.kubernetes_version) == len(objects)
    return objects


def _pod_spec(objects):
    workload = objects[-1]
    return workload["spec"]["template"]["spec"]


@pytest.mark.parametrize("model", ["device_plugin", "dra"])
def test_a_gang_on_nvl72_gets_its_compute_domain_and_stays_in_one_clique(model):
    objects = _render(f"whole_gpu-{model}-volcano-1.36-training_gang-plain", GB200)

    (domain,) = [o for o in objects if o["kind"] == "ComputeDomain"]
    assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    job = objects[-1]
    owner = domain["metadata"]["annotations"]["gpu-portal.example.com/owner"]
    assert owner == f"batch/v1 Job {job['metadata']['name']}"
    spec = _pod_spec(objects)
    assert {"name": "imex", "resourceClaimTemplateName": template} in spec["resourceClaims"]
    assert {"name": "imex"} in spec["containers"][0]["resources"]["claims"]
    (term,) = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == CLIQUE
    assert term["labelSelector"]["matchLabels"]["gpu-portal.example.com/request-id"] == str(CASES[
        f"whole_gpu-{model}-volcano-1.36-training_gang-plain"].request.request_id)
    node_terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": CLIQUE, "operator": "Exists"} in node_terms["nodeSelectorTerms"][0]["matchExpressions"]
    # The channel template is the driver's to create: the renderer must not write one of that name.
    assert not [o for o in objects if o["kind"] == "ResourceClaimTemplate" and o["metadata"]["name"] == template]


def test_tenant_exclusive_isolation_gives_the_tenant_its_own_compute_domain():
    objects = _render("whole_gpu-device_plugin-volcano-1.36-inference-exclusive_clique_driver", GB200)
    assert [o["kind"] for o in objects].count("ComputeDomain") == 1
    replicas = CASES["whole_gpu-device_plugin-volcano-1.36-inference-exclusive_clique_driver"].request.replicas
    # Several replicas share the one ComputeDomain, so they share one clique too.
    assert ("podAffinity" in _pod_spec(objects)["affinity"]) == (replicas > 1)


def test_shared_single_pod_work_and_single_node_nvlink_get_none():
    assert "ComputeDomain" not in [o["kind"] for o in _render("whole_gpu-device_plugin-volcano-1.36-inference-plain",
                                                                 GB200)]
    h200 = {"nvlink_domain": "7b968a6d-1c2e.1", "multinode_nvlink": False, "gpu_product": "NVIDIA-H200"}
    objects = _render("whole_gpu-device_plugin-volcano-1.36-training_gang-plain", h200,
                      gpu_product="NVIDIA-H200", dra_product_name="NVIDIA H200")
    assert "ComputeDomain" not in [o["kind"] for o in objects]


@pytest.mark.django_db
def test_preview_on_a_gb200_pool_explains_the_compute_domain(api, engineer, team_a):
    cluster_declare(name="nvl72", kubernetes_version="1.36", gang_scheduler="kai", applier="gitops",
                    gitops_repo="/tmp/nvl72-repo", gang_topology_key=CLIQUE, gang_topology_name="gpu-fabric",
                    pools=[{"name": "gb200", "gpu_model": "GB200-186GB", "node_count": 18, "gpus_per_node": 4,
                            "sharing_mode": "exclusive", "nvlink_domain": "7b968a6d-1c2e.1"}])
    answers = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 600,
               "gpus_per_replica": 4, "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}

    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "name": "llm", "answers": answers},
                                  format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert Decision.from_json(body["decision"]).multi_node.compute_domain is True
    reason = next(r for r in Decision.from_json(body["decision"]).reasons if r.field == "compute_domain")
    assert "ComputeDomain" in reason.text and reason.source == "cluster"
    kinds = [m["kind"] for m in body["manifests"]]
    assert "ComputeDomain" in kinds
    (group,) = [m for m in body["manifests"] if m["kind"] == "PodGroup"]
    assert group["spec"]["topologyConstraint"] == {"topology": "gpu-fabric", "requiredTopologyLevel": CLIQUE}
    assert validate_objects(body["manifests"], "1.36") == len(body["manifests"])

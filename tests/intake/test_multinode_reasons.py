"""The decision says what a failed rank does, where the gang is packed and whether it gets a ComputeDomain.

Given clusters the platform team declared with or without JobSet and a gang topology, when an engineer previews or
submits a multi-pod training request, then the reasons (source "cluster") and the request page say whether a failed
rank restarts the whole gang or fails it, and where the gang is packed; the rendered objects agree.
"""
from __future__ import annotations

import pytest
from django.test import Client

from intake.decisions import Decision, MultiNode
from workflows.services import request_submit
from provisioning.inventory import cluster_declare

pytestmark = pytest.mark.django_db

GANG = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
        "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
POOL = {"name": "h200", "gpu_model": "H200-141GB", "node_count": 2, "gpus_per_node": 8, "sharing_mode": "exclusive"}


def _cluster(**fields):
    return cluster_declare(name="train", kubernetes_version="1.36", gang_scheduler="kueue", applier="gitops",
                           gitops_repo="/tmp/train-repo", pools=[POOL], **fields)


def _preview(api, engineer):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "name": "llm", "answers": GANG},
                                  format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def _reason(decision, field):
    (reason,) = [r for r in decision.reasons if r.field == field]
    return reason


def test_with_jobset_and_a_topology_the_gang_restarts_whole_and_is_packed(api, engineer, team_a):
    _cluster(jobset_installed=True, gang_topology_key="nvidia.com/gpu.clique")

    body = _preview(api, engineer)

    decision = Decision.from_json(body["decision"])
    assert decision.multi_node == MultiNode(restart="jobset", topology="nvidia.com/gpu.clique",
                                            compute_domain=False, placement_may_stall=False)
    restart = _reason(decision, "restart")
    assert restart.source == "cluster" and "restarts the whole gang" in restart.text
    assert "podset-required-topology" in _reason(decision, "topology").text
    kinds = [m["kind"] for m in body["manifests"]]
    assert "JobSet" in kinds and "Job" not in kinds
    jobset = next(m for m in body["manifests"] if m["kind"] == "JobSet")
    pod_template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod_template["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] == (
        "nvidia.com/gpu.clique")


def test_without_jobset_the_reason_says_the_whole_job_fails_and_nothing_packs_it(api, engineer, team_a):
    _cluster()

    decision = Decision.from_json(_preview(api, engineer)["decision"])

    assert decision.multi_node.restart == "fail_job"
    assert "fails the whole Job at once" in _reason(decision, "restart").text
    assert "not packed" in _reason(decision, "topology").text


def test_the_request_page_says_what_a_failed_rank_does(engineer, team_a):
    _cluster(jobset_installed=True)
    gpu_request = request_submit(user=engineer, team=team_a, name="llm", raw_answers=GANG)
    client = Client()
    client.force_login(engineer)

    page = client.get(f"/requests/{gpu_request.pk}/").content.decode()

    assert 'data-testid="decision-restart">the whole gang restarts (JobSet)' in page
    assert "cluster setup" in page

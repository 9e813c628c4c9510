"""Placement skips pools that can never hold the request, and says so at preview (not at approval).

Given declared pools of different sizes, when an engineer previews or submits through the API, then a pool that
could not hold every replica at once even empty is skipped (and named in the reasons), a request that no pool can
ever hold is a 400 on the answer to change, and a replica never gets more than one MIG slice or time-sliced share.
"""
from __future__ import annotations

import pytest

from intake.decisions import Decision
from provisioning.inventory import cluster_declare

pytestmark = pytest.mark.django_db

GANG = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
        "gpus_per_replica": 8, "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


@pytest.fixture
def two_sizes(db):
    """A one-node H100 pool (the smaller GPU, ranked first) and a four-node H200 pool."""
    return cluster_declare(
        name="train", kubernetes_version="1.35", scheduling_model="device_plugin", gang_scheduler="volcano",
        applier="gitops",
        pools=[
            {"name": "h100-one", "gpu_model": "H100-80GB", "node_count": 1, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "driver_version": "570.124.06"},
            {"name": "h200-four", "gpu_model": "H200-141GB", "node_count": 4, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "driver_version": "570.124.06"},
            {"name": "a100-mig", "gpu_model": "A100-80GB", "node_count": 1, "gpus_per_node": 8,
             "sharing_mode": "mig", "mig_strategy": "mixed", "mig_layout": "all-1g.10gb",
             "driver_version": "550.90.07"},
        ],
    )


def preview(api, user, answers):
    return api(user).post("/api/v1/intake/preview/", {"team": "team-a", "answers": answers}, format="json")


def test_a_four_node_gang_goes_to_the_pool_that_holds_it_not_the_smallest_gpu(api, engineer, team_a, two_sizes):
    response = preview(api, engineer, GANG)

    assert response.status_code == 200, response.json()
    decision = Decision.from_json(response.json()["decision"])
    assert (decision.node_pool, decision.gpu_model) == ("h200-four", "H200-141GB")
    pool_reason = next(r for r in decision.reasons if r.field == "node_pool").text
    assert "train/h100-one (1 node of 8 GPUs hold at most 1 of the 4 replicas)" in pool_reason


def test_the_gang_routed_there_is_approved_not_refused_as_never_fitting(api, engineer, platform_user, team_a,
                                                                        two_sizes):
    created = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "llm", "answers": GANG},
                                 format="json").json()

    response = api(platform_user).post(f"/api/v1/requests/{created['id']}/approve/", {}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "approved"


def test_a_gang_no_pool_can_ever_hold_is_a_400_on_replicas_at_preview(api, engineer, team_a, two_sizes):
    response = preview(api, engineer, {**GANG, "replicas": 5})

    assert response.status_code == 400
    message = response.json()["answers"]["replicas"][0]
    assert "No pool can ever hold this request" in message and "fewer replicas" in message
    assert "train/h200-four: 4 nodes of 8 GPUs hold at most 4 of the 5 replicas" in message


def test_more_gpus_per_replica_than_a_node_has_is_a_400_on_gpus_per_replica(api, engineer, team_a, two_sizes):
    response = preview(api, engineer, {**GANG, "gpus_per_replica": 16, "gpu_memory_gb": 120, "replicas": 1})

    assert response.status_code == 400
    assert "fewer GPUs per replica" in response.json()["answers"]["gpus_per_replica"][0]


INFERENCE = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
             "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
            "image": "jupyter/base-notebook:latest"}


def test_two_mig_slices_per_replica_go_to_whole_gpus_where_the_rule_says_so(api, engineer, team_a, inventory):
    # inference-shared-latency states fallback_strategy: whole_gpu.
    response = preview(api, engineer, {**INFERENCE, "gpus_per_replica": 2})

    assert response.status_code == 200, response.json()
    decision = Decision.from_json(response.json()["decision"])
    assert decision.strategy == "whole_gpu" and decision.mig_profile is None
    strategy_reasons = [r.text for r in decision.reasons if r.field == "strategy"]
    assert any("cannot use MIG slices: a CUDA process sees one MIG device" in text for text in strategy_reasons)


def test_two_time_sliced_shares_per_replica_are_refused_on_gpus_per_replica(api, engineer, team_a, inventory):
    # development-standard states no fallback: the engineer changes the answer.
    response = preview(api, engineer, {**NOTEBOOK, "gpus_per_replica": 2})

    assert response.status_code == 400
    assert "only one time-sliced GPU share" in response.json()["answers"]["gpus_per_replica"][0]


def test_one_slice_per_replica_stays_on_mig(api, engineer, team_a, inventory):
    response = preview(api, engineer, {**INFERENCE, "replicas": 3})

    assert Decision.from_json(response.json()["decision"]).strategy == "mig"

"""Capacity-aware decisions: the decision function sees what discovery found on a synced cluster (the MIG profiles
offered now, the lowest driver present, the GPU model on the nodes) and the declared pools of a cluster never
synced."""
from __future__ import annotations

import pytest

from intake.services import request_evaluate

from workflows.services import request_preview
from provisioning.inventory_sync import inventory_sync
from provisioning.selectors import inventory_snapshot
from tests.conftest import VALID_ANSWERS
from kubesim import nodes as k
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401

pytestmark = pytest.mark.django_db

INFERENCE_30GB = {**VALID_ANSWERS, "gpu_memory_gb": 30}
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def pools(cluster_name="gpu-east"):
    snapshot = inventory_snapshot()
    return {p.name: p for c in snapshot.clusters if c.name == cluster_name for p in c.pools}


def sync(cluster):
    assert inventory_sync(cluster=cluster).status == "synced"


def test_a_cluster_never_synced_offers_its_declared_pools(east_live):
    east = pools()
    assert set(east) == {"h100-train", "h200-mig", "a100-mig-small", "l40s-shared"}
    assert east["h200-mig"].mig_profiles == {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    assert east["h100-train"].driver_major == 570


def test_a_synced_cluster_offers_what_its_nodes_offer(east_live, live_fake):
    live_fake.put(k.h200_mig_node("gpu-h200-2", layout="all-1g.18gb"))
    live_fake.put(k.a100_mig_node("gpu-a100-1", layout="all-balanced"))
    sync(east_live)

    east = pools()

    assert set(east) == {"h100-train", "h200-mig", "a100-mig-small", "l40s-shared", "b200-180gb-dra"}
    assert east["h200-mig"].mig_profiles == {"1g.18gb": 7, "2g.35gb": 1, "3g.71gb": 1}
    assert east["a100-mig-small"].mig_profiles == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert (east["a100-mig-small"].node_count, east["l40s-shared"].time_slicing_replicas) == (1, 4)
    assert east["h100-train"].nvlink_domain == k.H100_CLIQUE
    assert east["b200-180gb-dra"].scheduling_model == "dra"


def test_the_decision_changes_when_discovery_says_the_layout_changed(east_live, live_fake):
    before = request_evaluate(raw_answers=INFERENCE_30GB).decision
    assert (before.strategy, before.mig_profile, before.node_pool) == ("mig", "2g.35gb", "h200-mig")

    for name in ("gpu-h200-1", "gpu-h200-2"):  # mig-manager applied all-1g.18gb everywhere
        live_fake.put(k.h200_mig_node(name, layout="all-1g.18gb"))
    sync(east_live)
    after = request_evaluate(raw_answers=INFERENCE_30GB).decision

    assert after.strategy == "whole_gpu" and after.mig_profile is None
    assert "no pool offers a MIG profile that holds 30 GB" in " ".join(r.text for r in after.reasons)
    small = request_evaluate(raw_answers={**VALID_ANSWERS, "gpu_memory_gb": 16}).decision
    assert (small.mig_profile, small.node_pool) == ("1g.18gb", "h200-mig")


def test_the_decision_follows_the_driver_the_nodes_run(east_live, live_fake):
    floor = {**TRAINING, "min_driver_major": 575}
    assert request_evaluate(raw_answers=floor).decision.cluster == "gpu-west"  # declared: H100 on 570

    for i in (1, 2, 3, 4):
        live_fake.put(k.h100_node(f"gpu-h100-{i}", driver="580.65.06"))
    live_fake.put(k.h100_node("gpu-h100-5", driver="570.124.06", pool=None))
    sync(east_live)

    decision = request_evaluate(raw_answers=floor).decision
    assert (decision.cluster, decision.node_pool) == ("gpu-east", "h100-train")
    assert "this pool runs 580" in next(r.text for r in decision.reasons if r.field == "driver")


def test_a_synced_pool_without_nodes_offers_nothing(east_live, live_fake):
    for name in ("gpu-l40s-1", "gpu-l40s-2"):
        live_fake.remove("v1", "Node", name)
    sync(east_live)

    assert "l40s-shared" not in pools()
    dev = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
           "image": "jupyter/base-notebook:latest"}
    decision = request_evaluate(raw_answers=dev).decision
    assert decision.strategy == "whole_gpu" and decision.node_pool != "l40s-shared"


def test_objects_are_rendered_for_the_gpu_the_nodes_carry(east_live, live_fake, engineer, team_a):
    for i in (1, 2, 3, 4):  # the pool's nodes were replaced by H200s running whole
        node = k.gpu_node(f"gpu-h100-{i}", model="H200-141GB", pool="h100-train",
                          extra_labels={"nvidia.com/gpu.clique": k.H100_CLIQUE})
        live_fake.put(node)
    sync(east_live)

    preview = request_preview(user=engineer, team=team_a, raw_answers=TRAINING)

    assert (preview.decision.gpu_model, preview.decision.node_pool) == ("H200-141GB", "h100-train")
    job = next(o for o in preview.manifests if o["kind"] == "Job")
    assert job["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200"

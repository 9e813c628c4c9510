"""Answers read off the pod sets of work found in a cluster (intake.found, pure): what is read, what is assumed and
said, and that the review goes by exactly the pod sets (issue 23 item 3)."""
from __future__ import annotations

import pytest

from gpu.catalogue import load_catalogue
from intake.found import CannotDecide, answers_from_pod_sets
from provisioning.contract import shape_words
from provisioning.manifests.admission import pod_set_shape


def template(limits: dict, node_selector: dict | None = None, containers: int = 1, claims: list | None = None) -> dict:
    return {"spec": {"nodeSelector": node_selector or {}, "resourceClaims": claims or [], "containers": [
        {"name": f"c{i}", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["python"], "args": ["train.py"],
         "resources": {"limits": limits}} for i in range(containers)]}}


def answers(owner_kind: str, *pod_sets: tuple[int, dict]):
    shape = [pod_set_shape(count=count, template=t) for count, t in pod_sets]
    return answers_from_pod_sets(owner_kind=owner_kind, shape=shape, template=pod_sets[0][1],
                                 catalogue=load_catalogue(), shape_text=shape_words(shape))


def test_a_job_on_named_gpus_is_dedicated_batch_training_sized_by_its_model():
    found = answers("Job", (2, template({"nvidia.com/gpu": 4}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})))

    assert found.answers == {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
                             "gpu_memory_gb": 320, "gpus_per_replica": 4, "replicas": 2,
                             "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["python", "train.py"]}
    assert "GPU model from its node selector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3: H100-80GB." in found.notes


def test_without_a_product_selector_the_memory_is_assumed_and_said():
    catalogue = load_catalogue()
    smallest = min(catalogue.models.values(), key=lambda m: (m.memory_gb, m.key))
    found = answers("Deployment", (1, template({"nvidia.com/gpu": 1})))

    assert (found.answers["workload_class"], found.answers["latency"]) == ("inference", "latency_sensitive")
    assert found.answers["gpu_memory_gb"] == smallest.memory_gb
    assert any("assumed" in note and smallest.key in note for note in found.notes)


def test_every_container_and_every_pod_set_counts():
    # Issue 23 item 3: reviewed as 8 GPUs per pod, run with 16 (two containers of 8); reviewed as 1, admitted 65.
    two_containers = answers("Job", (1, template({"nvidia.com/gpu": 8}, containers=2)))
    assert two_containers.answers["gpus_per_replica"] == 16
    assert "exactly its pod sets" in two_containers.notes[0] and "1 pod(s) x {nvidia.com/gpu: 16}" in two_containers.notes[0]

    sets = answers("JobSet", (1, template({"nvidia.com/gpu": 1})), (64, template({"nvidia.com/gpu": 1})))
    assert sets.answers["replicas"] == 65
    assert "1 pod(s) x {nvidia.com/gpu: 1}" in sets.notes[0] and "64 pod(s) x {nvidia.com/gpu: 1}" in sets.notes[0]


def test_mig_shared_and_dra_work_is_a_request_reviewed_by_its_exact_pod_sets():
    # Issue 23 item 6: no longer refused; the nearest answers, and the exact pod sets said for the review.
    mig = answers("Job", (2, template({"nvidia.com/mig-1g.18gb": 1})))
    assert mig.answers["tenancy"] == "multi_tenant" and mig.answers["gpus_per_replica"] == 1
    assert "2 pod(s) x {nvidia.com/mig-1g.18gb: 1}" in mig.notes[0]
    assert any("cannot say this exactly (nvidia.com/mig-1g.18gb)" in note for note in mig.notes)

    dra = answers("Job", (1, template({}, claims=[{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}])))
    assert "1 pod(s) x {DRA template:two-gpus}" in dra.notes[0]


def test_what_asks_no_accelerator_cannot_be_decided():
    with pytest.raises(CannotDecide, match="No pod asks an accelerator"):
        answers("Job", (1, template({})))

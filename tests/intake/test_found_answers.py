"""Answers read off the pod template of work found in a cluster (intake.found, pure): what is read, what is
assumed and said, and what cannot be decided."""
from __future__ import annotations

import pytest

from intake.found import CannotDecide, answers_from_pod_template
from gpu.catalogue import load_catalogue


def template(limits: dict, node_selector: dict | None = None) -> dict:
    return {"spec": {"nodeSelector": node_selector or {}, "containers": [
        {"name": "c", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["python"], "args": ["train.py"],
         "resources": {"limits": limits}}]}}


def test_a_job_on_named_gpus_is_dedicated_batch_training_sized_by_its_model():
    found = answers_from_pod_template(owner_kind="Job", replicas=2, catalogue=load_catalogue(), template=template(
        {"nvidia.com/gpu": 4}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}))

    assert found.answers == {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
                             "gpu_memory_gb": 320, "gpus_per_replica": 4, "replicas": 2,
                             "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["python", "train.py"]}
    assert "GPU model from its node selector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3: H100-80GB." in found.notes


def test_without_a_product_selector_the_memory_is_assumed_and_said():
    catalogue = load_catalogue()
    smallest = min(catalogue.models.values(), key=lambda m: (m.memory_gb, m.key))
    found = answers_from_pod_template(owner_kind="Deployment", replicas=1, catalogue=catalogue,
                                      template=template({"nvidia.com/gpu": 1}))

    assert (found.answers["workload_class"], found.answers["latency"]) == ("inference", "latency_sensitive")
    assert found.answers["gpu_memory_gb"] == smallest.memory_gb
    assert any("assumed" in note and smallest.key in note for note in found.notes)


@pytest.mark.parametrize(("limits", "why"), [
    ({}, "No container asks nvidia.com/gpu"),
    ({"nvidia.com/mig-1g.18gb": 1}, "nvidia.com/mig-1g.18gb"),
    ({"nvidia.com/gpu": "lots"}, "not a whole number"),
])
def test_what_cannot_be_decided_says_why(limits, why):
    with pytest.raises(CannotDecide, match=why):
        answers_from_pod_template(owner_kind="Job", replicas=1, catalogue=load_catalogue(), template=template(limits))

"""Issue 23, item 7: on a Kueue cluster every GPU workload the portal renders goes through the team's LocalQueue,
not only gangs. Inference and development Deployments (Kueue's `deployment` integration) and one-replica training
Jobs (its `batch/job` integration) carry `kueue.x-k8s.io/queue-name` on the workload and its pod template, the Job
is created suspended, and the semantic checker's kueue-queue rule holds; MPS on DRA, which Kueue cannot admit with
its claim config, is refused instead of running outside Kueue.
"""

from __future__ import annotations

import pytest

from provisioning.manifests import RenderError, render_all, validate_objects
from tests.support.semantic import assert_schedulable, check

from .inventory import admitted_for, inventory_for
from .matrix import cases

CASES = {case.id: case for case in cases()}
QUEUE = {"kueue.x-k8s.io/queue-name": "gpu-ml-research"}
SINGLE_POD_SHAPES = [
    ("whole_gpu-device_plugin-kueue-1.36-inference-plain", "Deployment"),
    ("mig_mixed-dra-kueue-1.37-development-shared_driver", "Deployment"),
    ("ts_renamed-device_plugin-kueue-1.34-training_single-plain", "Job"),
    ("whole_gpu-dra-kueue-1.35-training_single-exclusive_host", "Job"),
]


@pytest.mark.parametrize(("case_id", "kind"), SINGLE_POD_SHAPES, ids=[c for c, _ in SINGLE_POD_SHAPES])
def test_a_gpu_workload_without_a_gang_goes_through_the_teams_local_queue(case_id, kind):
    case = CASES[case_id]

    objects = render_all(case.team, case.request, case.cluster)

    workload = objects[-1]
    assert workload["kind"] == kind
    assert QUEUE.items() <= workload["metadata"]["labels"].items()
    assert QUEUE.items() <= workload["spec"]["template"]["metadata"]["labels"].items()
    local_queue = next(o for o in objects if o["kind"] == "LocalQueue")
    assert local_queue["metadata"]["name"] == QUEUE["kueue.x-k8s.io/queue-name"]
    assert local_queue["metadata"]["namespace"] == workload["metadata"]["namespace"]
    if kind == "Job":
        assert workload["spec"]["suspend"] is True  # Kueue unsuspends it on admission
    else:
        assert "suspend" not in workload["spec"]  # Kueue gates a Deployment's pods instead
    validate_objects(objects, case.cluster.kubernetes_version)
    assert_schedulable(objects, inventory_for(case.cluster), admitted_for(case.team, case.request))


def test_the_checker_refuses_a_deployment_whose_gpus_bypass_kueue():
    case = CASES["whole_gpu-device_plugin-kueue-1.36-inference-plain"]
    objects = render_all(case.team, case.request, case.cluster)
    for labels in (objects[-1]["metadata"]["labels"], objects[-1]["spec"]["template"]["metadata"]["labels"]):
        labels.pop("kueue.x-k8s.io/queue-name")

    report = check(objects, inventory_for(case.cluster), admitted_for(case.team, case.request))

    assert report.rules() == {"kueue-queue"}
    assert len(report.problems) == 2  # the pods and the Deployment


def test_clusters_without_kueue_render_no_queue_name():
    case = CASES["whole_gpu-device_plugin-volcano-1.36-inference-plain"]
    objects = render_all(case.team, case.request, case.cluster)
    assert "kueue.x-k8s.io/queue-name" not in str(objects)


@pytest.mark.parametrize("shape", ["inference", "development", "training_single"])
def test_mps_on_dra_is_refused_on_a_kueue_cluster_rather_than_run_outside_kueue(shape):
    case = CASES[f"mps-dra-kueue-1.36-{shape}-plain"]
    with pytest.raises(RenderError, match="Kueue admits every GPU workload"):
        render_all(case.team, case.request, case.cluster)

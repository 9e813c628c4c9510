"""A LIST page decoded against `PodFields` (the fields the status rules read) gives the same facts as the page
decoded whole, for every pod shape the reconciliation tests build: a field `pod_fact` reads that the schema
leaves out would show here. Pure: the decoder of provisioning.kube.reads, no server."""
from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta

import pytest

from provisioning.kube.errors import PermanentKubeError
from provisioning.kube.reads import _decoded, _page_decoder
from provisioning.reconcile import facts_by_request
from provisioning.reconcile.pod_fields import PodFields
from tests.provisioning.reconcile import pods as k8s

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DOMAIN = "gpu-portal.io"


def every_shape() -> list[dict]:
    pods = []
    for n, shape in enumerate(("training_gang", "inference", "development")):
        workload = k8s.rendered_workload(shape, request_id=n + 1)
        base = [k8s.pod_for(workload, index=i, created=T) for i in range(2)]
        for pod in base:
            node = f"gpu-{pod['metadata']['name'][-3:]}"
            pods += [
                pod,
                k8s.moved(pod, k8s.unschedulable(pod, T)),
                k8s.moved(pod, k8s.image_pull_backoff(pod, node, T)),
                k8s.moved(pod, k8s.image_pull_backoff(pod, node, T, reason="InvalidImageName")),
                k8s.moved(pod, k8s.running(pod, node, T, ready=False, restarts=2)),
                k8s.moved(pod, k8s.oom_killed_then_running(pod, node, T, T + timedelta(minutes=3))),
                k8s.moved(pod, k8s.terminated(pod, node, T, T + timedelta(hours=1))),
                k8s.moved(pod, k8s.terminated(pod, node, T, T + timedelta(hours=1), exit_code=1, reason="Error",
                                              message="Traceback: CUDA error")),
                k8s.moved(pod, k8s.evicted(pod, node, T, T + timedelta(minutes=9))),
            ]
    gated, deleting = copy.deepcopy(pods[0]), copy.deepcopy(pods[4])
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    deleting["metadata"]["deletionTimestamp"] = "2026-03-02T10:00:00Z"
    deleting["spec"]["initContainers"] = [{"name": "warmup", "image": "busybox"}]
    deleting["status"]["initContainerStatuses"] = [{"name": "warmup", "ready": True, "restartCount": 0,
                                                     "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]
    for index, pod in enumerate(pods + [gated, deleting]):  # each its own pod
        pod["metadata"]["uid"] = f"{pod['metadata']['uid'][:-6]}{index:06d}"
    return pods + [gated, deleting]


def test_the_fields_read_give_the_facts_of_the_whole_pod():
    pods = every_shape()
    body = json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "items": pods})

    page = _page_decoder(PodFields).decode(body.encode())

    assert page["metadata"] == {"resourceVersion": "9"}
    assert "managedFields" not in page["items"][0]["metadata"] and "tolerations" not in page["items"][0]["spec"]
    assert facts_by_request(page["items"], label_domain=DOMAIN) == facts_by_request(pods, label_domain=DOMAIN)
    assert sum(len(f) for f in facts_by_request(pods, label_domain=DOMAIN).values()) == len(pods)


def test_nulls_and_missing_levels_are_read_as_a_whole_decode_reads_them():
    pods = [{"metadata": {"name": "p", "namespace": "n", "uid": "u", "labels": {
        "app.kubernetes.io/managed-by": "gpu-portal", f"{DOMAIN}/request-id": "7"}, "annotations": None},
        "spec": {"containers": None, "nodeName": None}, "status": {"conditions": None, "phase": None}},
        {"metadata": {"name": "q", "uid": "v", "labels": {"app.kubernetes.io/managed-by": "gpu-portal",
                                                          f"{DOMAIN}/request-id": "7"}}}]
    page = _page_decoder(PodFields).decode(json.dumps({"items": pods}).encode())
    assert facts_by_request(page["items"], label_domain=DOMAIN) == facts_by_request(pods, label_domain=DOMAIN)


def test_an_answer_that_is_not_a_pod_list_is_a_permanent_error_that_says_so():
    with pytest.raises(PermanentKubeError, match="list pods: the answer is not a PodList"):
        _decoded(_page_decoder(PodFields), b'{"items": {"not": "a list"}}', "list pods")

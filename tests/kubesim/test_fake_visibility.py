"""The fake API server's Kueue visibility API (kueue v0.19.2 pkg/visibility/storage/pending_workloads_{cq,lq}.go):
pending Workloads of a ClusterQueue, highest priority then oldest first, positions from 0, read over HTTPS through
the portal's own read."""
from __future__ import annotations

import pytest
from kubernetes.dynamic.exceptions import NotFoundError

from provisioning.kube.client import raw
from provisioning.kube.scheduling import pending_workloads


def queue(namespace, name):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": "gpus"}}


def workload(namespace, name, queue_name, created, *, priority=0, reserved=False):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
            "spec": {"queueName": queue_name, "priority": priority, "podSets": [{"name": "main", "count": 1}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True" if reserved else "False",
                                       "reason": "QuotaReserved" if reserved else "WaitingForQuota"}]}}


@pytest.fixture
def queues(fake_kube):
    for ns in ("gpu-a", "gpu-b"):
        fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        fake_kube.put(queue(ns, ns))
    fake_kube.put(workload("gpu-a", "a-old", "gpu-a", "2026-11-30T08:00:00Z"))
    fake_kube.put(workload("gpu-b", "b-urgent", "gpu-b", "2026-11-30T09:00:00Z", priority=100))
    fake_kube.put(workload("gpu-a", "a-new", "gpu-a", "2026-11-30T10:00:00Z"))
    fake_kube.put(workload("gpu-a", "a-admitted", "gpu-a", "2026-11-30T07:00:00Z", reserved=True))


def test_a_local_queue_lists_its_pending_workloads_with_both_positions(queues, kube_client):
    items = pending_workloads(kube_client, namespace="gpu-a", local_queue="gpu-a")
    assert [(i["metadata"]["name"], i["positionInLocalQueue"], i["positionInClusterQueue"], i["localQueueName"])
            for i in items] == [("a-old", 0, 1, "gpu-a"), ("a-new", 1, 2, "gpu-a")]


def test_a_cluster_queue_lists_every_pending_workload_and_an_unknown_queue_is_not_found(queues, kube_client):
    answer = kube_client.dynamic.request(
        "get", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/gpus/pendingworkloads", serializer=raw)
    assert answer["kind"] == "PendingWorkloadsSummary"
    assert [i["metadata"]["name"] for i in answer["items"]] == ["b-urgent", "a-old", "a-new"]
    with pytest.raises(NotFoundError):
        kube_client.dynamic.request(
            "get", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nope/pendingworkloads", serializer=raw)

"""The pod store (provisioning.reconcile.store): pods kept as their facts by request, watch events folded in, the
values many pods repeat kept once. Pure: no database, no server."""
from __future__ import annotations

import copy
from datetime import UTC, datetime

from provisioning.reconcile import PodStore, facts_by_request
from tests.provisioning.reconcile import pods as k8s

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DOMAIN = "gpu-portal.io"


def gang(request_id: int, count: int = 3) -> list[dict]:
    workload = k8s.rendered_workload(request_id=request_id)
    pods = [k8s.pod_for(workload, index=i, created=T) for i in range(count)]
    return [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", T)) for i, p in enumerate(pods)]


def test_the_store_holds_the_facts_facts_by_request_would_give():
    pods = gang(1) + gang(2, 2)
    store = PodStore(label_domain=DOMAIN)
    for pod in reversed(pods):  # in any order
        store.add(pod)

    assert dict(store) == facts_by_request(pods, label_domain=DOMAIN)
    assert (store.pods, store.counts()) == (5, {1: 3, 2: 2})


def test_values_many_pods_repeat_are_kept_once():
    store = PodStore(label_domain=DOMAIN)
    for pod in gang(1) + gang(2):
        store.add(pod)
    a, b = store[1][0], store[2][1]
    assert a.namespace is b.namespace and a.phase is b.phase
    assert a.containers[0].image is b.containers[0].image and a.gpu_equivalents is b.gpu_equivalents
    assert a.uid is not b.uid


def test_watch_events_are_folded_in_and_move_the_resource_version():
    pods = gang(1)
    store = PodStore(label_domain=DOMAIN, resource_version="10")
    for pod in pods:
        store.add(pod)
    finished = k8s.moved(pods[0], k8s.terminated(pods[0], "gpu-h100-00", T, T))
    finished["metadata"]["resourceVersion"] = "11"

    assert store.apply("MODIFIED", finished) == 1
    assert store[1][0].phase == "Succeeded" and store.resource_version == "11"
    assert store.apply("BOOKMARK", {"metadata": {"resourceVersion": "12"}}) is None
    assert store.resource_version == "12" and store.pods == 3

    unlabelled = copy.deepcopy(pods[1])
    unlabelled["metadata"].update(labels={}, resourceVersion="13")
    assert store.apply("DELETED", unlabelled) == 1  # it left the selection by losing its labels
    assert store.apply("DELETED", pods[2]) == 1
    assert store.apply("DELETED", pods[0]) == 1
    assert store.pods == 0 and 1 not in store and store.resource_version == "13"
    assert store.apply("DELETED", pods[0]) is None  # already gone

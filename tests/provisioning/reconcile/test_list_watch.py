"""How the reconciliation loop reads pods, over HTTPS against the fake API server: a LIST in pages that follows the
`continue` tokens and keeps each pod only as its facts, a LIST started again when its continue token expires
midway, a watch from a compacted resourceVersion (410 Gone) answered by a new LIST, a resumed watch that asks for
bookmarks and moves the resourceVersion on, and database queries that do not grow with the number of pages."""
from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kubesim import paging
from provisioning.models import ClusterReconcileState
from provisioning.reconcile import PodFact, cluster_status_reconcile, watch
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import Clock, minutes, move, seed
from tests.provisioning.reconcile.test_flow import PODS, pod_lists, pod_watches, reconcile, status

pytestmark = pytest.mark.django_db


def gang(applied, fake_kube, name: str = "train", *, node_prefix: str = "gpu-h100-0") -> tuple:
    """An applied training request whose 4 pods run."""
    gpu_request, job = applied(name)
    pods = [seed(fake_kube, p, k8s.running(p, f"{node_prefix}{i}", minutes(1)))
            for i, p in enumerate(k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4))]
    return gpu_request, pods


def test_the_pods_are_listed_in_pages_that_follow_the_continue_tokens(applied, east_on_fake, fake_kube, settings):
    settings.PORTAL_RECONCILE_LIST_PAGE_SIZE = 3
    first, _ = gang(applied, fake_kube, "first")
    second, _ = gang(applied, fake_kube, "second", node_prefix="gpu-h100-1")

    outcome = reconcile(east_on_fake, Clock(minutes(2)))

    lists = [r.params for r in pod_lists(fake_kube)]
    assert [p["limit"] for p in lists] == ["3", "3", "3"]
    assert "continue" not in lists[0] and "resourceVersion" not in lists[0]  # a quorum read the server pages
    tokens = [p["continue"] for p in lists[1:]]
    revisions = {paging.decode_continue(token)[1] for token in tokens}
    state = ClusterReconcileState.objects.get(cluster=east_on_fake)
    assert revisions == {int(state.resource_version)}  # every page at the list's revision, where a watch resumes
    assert (outcome.listed, outcome.pods, status(first), status(second)) == (True, 8, "running", "running")
    store = watch._POD_STORES[east_on_fake.pk]
    assert sorted(store) == [first.pk, second.pk] and store.pods == 8
    assert all(isinstance(fact, PodFact) for facts in store.values() for fact in facts)  # facts, not pods


def test_a_list_whose_continue_token_expires_midway_is_started_again(applied, east_on_fake, fake_kube, settings):
    settings.PORTAL_RECONCILE_LIST_PAGE_SIZE = 2
    gpu_request, pods = gang(applied, fake_kube)
    first = fake_kube.get("v1", "Pod", pods[0]["metadata"]["name"], pods[0]["metadata"]["namespace"])
    then = int(first["metadata"]["resourceVersion"])
    move(fake_kube, pods[3], k8s.terminated(pods[3], "gpu-h100-03", minutes(1), minutes(2), exit_code=1))
    fake_kube.compact()
    # The first page as the server sent it at `then`: by the time the second is asked for, `then` is compacted.
    first.pop("apiVersion"), first.pop("kind")
    fake_kube.fail_next("GET", f"^{PODS}$", 200, body={
        "kind": "PodList", "apiVersion": "v1", "items": [first],
        "metadata": {"resourceVersion": str(then), "continue": paging.encode_continue(
            f"{first['metadata']['namespace']}/{first['metadata']['name']}\x00", then)}})

    outcome = reconcile(east_on_fake, Clock(minutes(3)))

    lists = [r.params for r in pod_lists(fake_kube)]
    assert "continue" in lists[1] and "continue" not in lists[2]  # the 410 on page two started the list again
    assert len(lists) == 4 and outcome.listed and outcome.pods == 4
    assert watch._POD_STORES[east_on_fake.pk].resource_version == \
        ClusterReconcileState.objects.get(cluster=east_on_fake).resource_version
    failed = [e for e in gpu_request.events.filter(kind="cluster") if e.reason in ("Failed", "Error")]
    assert failed, "the pod that failed after the first page was seen in the new list"


def test_a_watch_from_a_compacted_resource_version_lists_again(applied, east_on_fake, fake_kube):
    gpu_request, job = applied()
    pods = [seed(fake_kube, p, k8s.unschedulable(p, minutes(0)))
            for p in (k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4))]
    clock = Clock(minutes(1))
    reconcile(east_on_fake, clock, watch_seconds=1)
    stopped_at = ClusterReconcileState.objects.get(cluster=east_on_fake).resource_version
    for i, pod in enumerate(pods):
        move(fake_kube, pod, k8s.running(pod, f"gpu-h100-0{i}", minutes(2)))
    compacted = fake_kube.compact()  # the history the watch would resume from is gone

    outcome = reconcile(east_on_fake, clock.at(minutes(3)), watch_seconds=1)

    resumed = pod_watches(fake_kube)[1]
    assert resumed.params["resourceVersion"] == stopped_at
    assert outcome.listed and f"too old resource version: {stopped_at} ({compacted})" in outcome.message
    assert len(pod_lists(fake_kube)) == 2 and status(gpu_request) == "running"
    assert int(ClusterReconcileState.objects.get(cluster=east_on_fake).resource_version) >= compacted


def test_a_resumed_watch_asks_for_bookmarks_and_moves_the_resource_version_on(applied, east_on_fake, fake_kube):
    gpu_request, job = applied()
    pods = [seed(fake_kube, p, k8s.unschedulable(p, minutes(0)))
            for p in (k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4))]
    clock = Clock(minutes(1))
    reconcile(east_on_fake, clock, watch_seconds=1)

    def start_them():  # while the run watches: the scheduler places all four
        for i, pod in enumerate(pods):
            move(fake_kube, pod, k8s.running(pod, f"gpu-h100-0{i}", minutes(2)))

    timer = threading.Timer(0.3, start_them)
    timer.start()
    outcome = reconcile(east_on_fake, clock.at(minutes(3)), watch_seconds=2)
    timer.join()

    assert not outcome.listed and outcome.watch_events == 4 and status(gpu_request) == "running"
    assert all(w.params.get("allowWatchBookmarks") == "true" for w in pod_watches(fake_kube))
    last = max(int(fake_kube.get("v1", "Pod", p["metadata"]["name"], p["metadata"]["namespace"])["metadata"][
        "resourceVersion"]) for p in pods)
    assert watch._POD_STORES[east_on_fake.pk].resource_version == str(last)
    assert ClusterReconcileState.objects.get(cluster=east_on_fake).resource_version == str(last)


def test_a_run_costs_the_same_queries_in_one_page_as_in_many(applied, east_on_fake, fake_kube, settings):
    for n in range(3):
        gang(applied, fake_kube, f"train-{n}", node_prefix=f"gpu-h100-{n}")
    reconcile(east_on_fake, Clock(minutes(2)))  # the first run records the statuses and events

    def queries(page_size: int) -> int:
        settings.PORTAL_RECONCILE_LIST_PAGE_SIZE = page_size
        requests_before = len(pod_lists(fake_kube))
        with CaptureQueriesContext(connection) as captured:
            outcome = cluster_status_reconcile(cluster_id=east_on_fake.pk, watch_seconds=0, clock=Clock(minutes(3)))
        assert outcome.status == "ok" and outcome.pods == 12
        return len(captured), len(pod_lists(fake_kube)) - requests_before

    (one_page, lists), (many_pages, pages) = queries(500), queries(2)
    assert (lists, pages) == (1, 6) and one_page == many_pages

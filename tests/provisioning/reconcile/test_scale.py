"""`status_reconcile` at scale: a first cycle (statuses change, stalls open, every event is new) costs the same
queries whatever the number of pods, and two cycles running at once, on the same cluster or on two, leave what one
cycle leaves: the same statuses, stalls and events, none twice."""
from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connections

from intake.models import GpuRequest, RequestEvent
from provisioning.inventory import cluster_declare
from provisioning.demo import CLUSTERS
from portal.models import Notice
from provisioning.models import Cluster, GangStall, ProvisioningJob
from provisioning.reconcile import status_reconcile
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import minutes, pods_of

NOW = minutes(16)  # past the training stall threshold for gangs partial since minute 1


def observed(gpu_request, kind: str) -> list[dict]:
    """The pods of one request as the cluster shows them: a partial gang, all running, or all Pending."""
    pods = pods_of(gpu_request)
    if kind == "partial":
        return [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(1))) for i, p in enumerate(pods[:-1])] + [
            k8s.moved(pods[-1], k8s.unschedulable(pods[-1], minutes(0)))]
    if kind == "running":
        return [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(1))) for i, p in enumerate(pods)]
    return [k8s.moved(p, k8s.unschedulable(p, minutes(0))) for p in pods]


KINDS = ("partial", "running", "pending")


def fleet(provision, prefix: str, count: int) -> list[tuple[GpuRequest, str]]:
    return [(provision(f"{prefix}-{i}"), KINDS[i % len(KINDS)]) for i in range(count)]


def pods_for(requests) -> list[dict]:
    return [pod for gpu_request, kind in requests for pod in observed(gpu_request, kind)]


def summary(requests) -> list[tuple]:
    """What reconciliation left for each request, in order: status, events by (kind, reason), stalls, notices."""
    rows = []
    for gpu_request, _ in requests:
        found = RequestEvent.objects.filter(request=gpu_request, kind__in=["transition", "cluster", "note"])
        rows.append((
            GpuRequest.objects.get(pk=gpu_request.pk).status,
            sorted(Counter(found.values_list("kind", "reason")).items()),
            GangStall.objects.filter(request=gpu_request).count(),
            Notice.objects.filter(gang_stall__request=gpu_request).count(),
        ))
    return rows


@pytest.mark.django_db
def test_a_first_cycle_costs_the_same_queries_for_12_and_60_pods(
    provision, inventory, notified_team, django_assert_max_num_queries
):
    east = Cluster.objects.get(name="gpu-east")
    # A stall's notices name it by its content type, read once per process (ContentType's cache), not per cycle.
    ContentType.objects.get_for_model(GangStall)

    def first_cycle(requests, new) -> int:
        pods = pods_for(requests)  # rendering them reads the database: not the cycle's queries
        with django_assert_max_num_queries(16) as captured:
            outcome = status_reconcile(cluster=east, pods=pods, now=NOW)
        assert outcome.stalls_opened == sum(kind == "partial" for _, kind in new)
        return len(captured)

    small = fleet(provision, "small", 3)  # 12 pods
    small_queries = first_cycle(small, small)
    large = fleet(provision, "large", 12)  # 48 more pods, 4 stalls, 8 status changes
    large_queries = first_cycle(small + large, large)

    assert small_queries == large_queries, (small_queries, large_queries)
    assert [status for status, *_ in summary(large)] == ["stalled", "running", "provisioning"] * 4
    assert Notice.objects.filter(gang_stall__request__in=[r for r, _ in large]).count() == 4 * 2  # mail, hook


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("layout", ["same cluster", "two clusters"])
def test_two_cycles_at_once_leave_what_one_cycle_leaves(provision, inventory, settings, layout):
    settings.PLATFORM_NOTIFICATION_EMAIL = []  # nobody to notify: a note on the request, nothing to dispatch
    east = Cluster.objects.get(name="gpu-east")
    west = Cluster.objects.get(name="gpu-west")
    reference = cluster_declare(**{**CLUSTERS[0], "name": "gpu-reference"})
    alone, together = fleet(provision, "alone", 6), fleet(provision, "together", 6)
    ProvisioningJob.objects.filter(request__in=[r for r, _ in alone]).update(cluster=reference)
    if layout == "two clusters":
        ProvisioningJob.objects.filter(request__in=[r for r, _ in together[3:]]).update(cluster=west)
        work = [(east, pods_for(together[:3])), (west, pods_for(together[3:]))]
    else:
        work = [(east, pods_for(together)), (east, pods_for(together))]

    one = status_reconcile(cluster=reference, pods=pods_for(alone), now=NOW)
    start, outcomes, errors = threading.Barrier(len(work)), [], []

    def worker(cluster, pods) -> None:
        try:
            start.wait(timeout=30)
            outcomes.append(status_reconcile(cluster=cluster, pods=pods, now=NOW))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=item) for item in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert not errors and len(outcomes) == 2
    assert summary(together) == summary(alone)
    assert sum(o.events for o in outcomes) == one.events > 0
    assert sorted(t[1:] for o in outcomes for t in o.transitions) == sorted(t[1:] for t in one.transitions)
    assert sum(o.stalls_opened for o in outcomes) == one.stalls_opened == 2

"""The waits of a whole Kueue queue at once (provisioning.queue_waits), over HTTPS against the fake API server:
gangs applied by the real provisioning task, Kueue's Workloads and quota from kubesim.kueue, then one refresh that
reads the cluster once and stores a reading for every queued request: Kueue's own reason, the request's place in
the ClusterQueue, and an estimate that comes later the further back it waits, from the running work's expected
ends. Its database queries do not grow with the depth of the queue."""
from __future__ import annotations

import datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from workflows.services import request_approve, request_submit
from kubesim import eta, kueue
from kubesim.server import FakeKubeAPI
from provisioning.inventory import team_quota_set
from provisioning.models import Cluster, RequestWait
from provisioning.queue_waits import queue_wait_refresh

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
GANG = {**eta.TRAINING, "gpus_per_replica": 8, "replicas": 2, "expected_hours": 0.5}  # 16 GPUs


@pytest.fixture
def kueue_east(inventory):
    fake = FakeKubeAPI.start(git_version="v1.35.2")
    try:
        eta.seed(fake, quota_gpus=40)  # the ClusterQueue gpu-portal holds 40 GPUs
        call_command("register_cluster", "gpu-east", "--server", fake.url, "--token", "t", "--ca-cert-file",
                     fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue", stdout=StringIO())
        yield fake, Cluster.objects.get(name="gpu-east")
    finally:
        fake.stop()


def queued(fake, team, engineer, platform_user, names) -> list:
    made = []
    for name in names:
        gpu_request = request_submit(user=engineer, team=team, name=name, raw_answers=GANG)
        request_approve(user=platform_user, request_id=gpu_request.pk, comment="queue test")
        made.append(gpu_request)
    kueue.step(fake, now=NOW.timestamp())  # Workloads made, quota reserved oldest first
    return made


def refreshed(cluster) -> tuple[int, set[int]]:
    with CaptureQueriesContext(connection) as captured:
        done = queue_wait_refresh(cluster=cluster, now=NOW)
    return len(captured), done


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_one_refresh_explains_the_whole_queue_with_estimates_in_queue_order(
        kueue_east, team_a, engineer, platform_user, eager_celery):
    fake, cluster = kueue_east
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=400)
    first = queued(fake, team_a, engineer, platform_user, [f"gang-{i}" for i in range(5)])

    _, done = refreshed(cluster)

    running, waiting = first[:2], first[2:]  # 2 x 16 GPUs fit the 40; the other three wait
    assert done == {r.pk for r in waiting}
    readings = [RequestWait.objects.get(request=r) for r in waiting]
    assert [w.queue_position["position_in_cluster_queue"] for w in readings] == [0, 1, 2]
    assert all(w.blockers[0]["reason"] == "WaitingForQuota" for w in readings)
    assert readings[0].unblock[0].startswith("It is number 1 of the 3 workloads waiting in Kueue's ClusterQueue")
    estimates = [w.estimated_start for w in readings]
    assert all(e is not None for e in estimates) and estimates == sorted(estimates)
    # The head goes in when one running gang ends: its admission plus its expected half hour.
    assert NOW + datetime.timedelta(minutes=29) <= estimates[0] <= NOW + datetime.timedelta(minutes=31)
    assert estimates[2] > estimates[0] and all(w.first_estimate == w.estimated_start for w in readings)
    assert not RequestWait.objects.filter(request__in=running).exists()  # admitted: not this refresh's to explain


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_refresh_costs_the_same_queries_for_a_queue_of_3_and_of_9(
        kueue_east, team_a, engineer, platform_user, eager_celery):
    fake, cluster = kueue_east
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=400)
    queued(fake, team_a, engineer, platform_user, [f"gang-{i}" for i in range(5)])
    refreshed(cluster)
    shallow, done = refreshed(cluster)  # every reading there already: updated
    assert len(done) == 3

    queued(fake, team_a, engineer, platform_user, [f"more-{i}" for i in range(6)])
    refreshed(cluster)
    deep, done = refreshed(cluster)

    assert len(done) == 9 and shallow == deep

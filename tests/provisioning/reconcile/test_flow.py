"""Reconciliation over HTTP against the fake Kubernetes API server: requests approved and applied by the real
provisioning task, pods created as their controllers would and moved through their phases with `patch`, then the
loop (`cluster_status_reconcile`: LIST, bounded WATCH) turning what it sees into statuses, events, stalls and
notifications. Time is the injected clock's.
"""
from __future__ import annotations

import threading

import pytest
from django.core import mail
from django.test import Client

from intake.models import GpuRequest
from portal.models import Notice
from provisioning.models import ClusterReconcileState, GangStall, ProvisioningJob
from provisioning.reconcile import cluster_status_reconcile
from tests.conftest import VALID_ANSWERS, client_for
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import Clock, minutes, move, seed

pytestmark = pytest.mark.django_db

PODS = "/api/v1/pods"


def reconcile(cluster, clock, watch_seconds: int = 0):
    outcome = cluster_status_reconcile(cluster_id=cluster.pk, watch_seconds=watch_seconds, clock=clock)
    assert outcome.status == "ok", outcome.summary()
    return outcome


def status(gpu_request) -> str:
    return GpuRequest.objects.get(pk=gpu_request.pk).status


def pod_lists(fake_kube) -> list:
    return [r for r in fake_kube.requests if r.method == "GET" and r.path == PODS and r.params.get("watch") is None]


def pod_watches(fake_kube) -> list:
    return [r for r in fake_kube.requests if r.method == "GET" and r.path == PODS and r.params.get("watch")]


def test_a_training_gang_moves_through_its_phases(applied, east_on_fake, fake_kube, engineer):
    gpu_request, job = applied()
    pods = [seed(fake_kube, p, k8s.unschedulable(p, minutes(0))) for p in
            (k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4))]
    clock = Clock()

    outcome = reconcile(east_on_fake, clock.at(minutes(1)))
    assert (outcome.listed, outcome.pods, outcome.requests, status(gpu_request)) == (True, 4, 1, "provisioning")
    assert pod_lists(fake_kube)[-1].params["labelSelector"] == "app.kubernetes.io/managed-by=gpu-portal"

    for i, pod in enumerate(pods):
        move(fake_kube, pod, k8s.running(pod, f"gpu-h100-0{i}", minutes(2)))
    reconcile(east_on_fake, clock.at(minutes(3)))
    assert status(gpu_request) == "running"

    for pod in pods:
        move(fake_kube, pod, k8s.terminated(pod, "n", minutes(2), minutes(60)))
    reconcile(east_on_fake, clock.at(minutes(61)))
    assert status(gpu_request) == "completed"

    history = [(e.kind, e.reason) for e in GpuRequest.objects.get(pk=gpu_request.pk).events.all()]
    assert history.count(("cluster", "Unschedulable")) == 4 and history.count(("cluster", "Scheduled")) == 4
    assert history.count(("cluster", "Started")) == 4 and history.count(("cluster", "Completed")) == 4
    assert [h for h in history if h[0] == "transition"][-2:] == [("transition", "AllRunning"),
                                                                ("transition", "Completed")]
    # The request page and the API show the cluster's words, with the reason.
    page = _page(engineer, gpu_request)
    assert 'Cluster event <span class="muted">(unschedulable)</span>' in page and "is waiting for a node: 0/12 nodes are available" in page
    assert f"Pod {pods[0]['metadata']['name']} (rank 0) scheduled on gpu-h100-00." in page
    body = client_for(engineer).get(f"/api/v1/requests/{gpu_request.pk}/").json()
    started = next(e for e in body["events"] if e["reason"] == "Started")
    assert (started["kind"], started["actor"]) == ("cluster", None)
    assert started["comment"] == f"Pod {pods[0]['metadata']['name']} started on gpu-h100-00."
    assert body["stall"] is None and body["burnt_gpu_hours"] == "0.000000"


def _page(user, gpu_request) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/requests/{gpu_request.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_oom_kills_evictions_and_image_pull_errors_in_plain_words_then_failed_and_removed(
    applied, east_on_fake, fake_kube, settings, django_capture_on_commit_callbacks
):
    settings.PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS = 600
    gpu_request, deployment = applied("chat", {**VALID_ANSWERS, "replicas": 3})
    oom, gone, stuck = (k8s.pod_for(deployment, index=i, created=minutes(0)) for i in range(3))
    seed(fake_kube, oom, k8s.oom_killed_then_running(oom, "gpu-h200-01", minutes(1), minutes(4), restarts=2))
    seed(fake_kube, gone, k8s.evicted(gone, "gpu-h200-02", minutes(1), minutes(3)))
    seed(fake_kube, stuck, k8s.image_pull_backoff(stuck, "gpu-h200-03", minutes(1)))
    clock = Clock()

    reconcile(east_on_fake, clock.at(minutes(5)))
    words = dict(GpuRequest.objects.get(pk=gpu_request.pk).events.filter(kind="cluster").values_list("reason",
                                                                                                    "comment"))
    assert words["OOMKilled"] == (f"Pod {oom['metadata']['name']}: container main was killed because it ran out of "
                                  "memory (OOMKilled); restarts: 2.")
    assert words["Evicted"].startswith(f"Pod {gone['metadata']['name']} was evicted from node gpu-h200-02: The node "
                                       "was low on resource: memory.")
    assert words["ImagePullBackOff"].startswith(f"Pod {stuck['metadata']['name']}: container main cannot pull its "
                                                "image nvcr.io/nvidia/tritonserver:25.01-py3 (ImagePullBackOff)")
    assert status(gpu_request) == "provisioning"

    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, clock.at(minutes(10)))  # ten minutes without the image
    failed = GpuRequest.objects.get(pk=gpu_request.pk)
    assert failed.status == "failed"
    assert failed.events.get(to_status="failed").reason == "ImagePullFailed"
    assert ProvisioningJob.objects.get(request=gpu_request, kind="teardown").status == "succeeded"
    assert fake_kube.find("apps/v1", "Deployment", None, f"gpu-portal.io/request-id={gpu_request.pk}") == []


def _partial_gang(fake_kube, job):
    """3 of 4 pods running since minute 1, the fourth Pending: no node has room for it."""
    pods = [k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4)]
    for i, pod in enumerate(pods[:3]):
        seed(fake_kube, pod, k8s.running(pod, f"gpu-h100-0{i}", minutes(1)))
    seed(fake_kube, pods[3], k8s.unschedulable(pods[3], minutes(0)))
    return pods


def test_the_stalled_gang_path(applied, east_on_fake, fake_kube, notified_team, webhook, engineer,
                               django_capture_on_commit_callbacks):
    gpu_request, job = applied()
    pods = _partial_gang(fake_kube, job)
    clock = Clock()

    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, clock.at(minutes(10)))
    assert status(gpu_request) == "provisioning" and not mail.outbox and not webhook.received

    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, clock.at(minutes(16)))  # past the training threshold of 15 minutes
    assert status(gpu_request) == "stalled"
    stall = GangStall.objects.get(request=gpu_request)
    assert (stall.running_pods, stall.pending_pods, str(stall.gpu_equivalents_running)) == (3, 1, "24.000000")
    assert len(mail.outbox) == 1 and len(webhook.received) == 1
    assert mail.outbox[0].to == ["team-a@example.com", "gpu-platform@example.com"]
    assert webhook.received[0].body["event"] == "gang.stalled"

    for later in (20, 40):
        with django_capture_on_commit_callbacks(execute=True):
            reconcile(east_on_fake, clock.at(minutes(later)))
    assert (len(mail.outbox), len(webhook.received)) == (1, 1)  # notified once

    # The request page and the API show the stall and what it burns.
    body = client_for(engineer).get(f"/api/v1/requests/{gpu_request.pk}/").json()
    assert body["status"] == "stalled" and body["stall"]["ended_at"] is None
    assert body["stall"]["pending"][0]["pod"] == pods[3]["metadata"]["name"]
    assert "0/12 nodes are available" in body["stall"]["pending"][0]["text"]
    page = _page(engineer, gpu_request)
    assert 'data-testid="stall-current"' in page and "3 pods running" in page

    move(fake_kube, pods[3], k8s.running(pods[3], "gpu-h100-07", minutes(45)))
    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, clock.at(minutes(46)))
    assert status(gpu_request) == "running"
    stall.refresh_from_db()
    assert (stall.end_reason, stall.ended_at) == ("recovered", minutes(46))
    assert stall.burnt_gpu_hours() == 18  # 24 GPU-equivalents x 45 minutes (minute 1 to 46)
    body = client_for(engineer).get(f"/api/v1/requests/{gpu_request.pk}/").json()
    assert body["burnt_gpu_hours"] == "18.000000" and body["stall"]["burnt_gpu_equivalent_seconds"] == "64800.000000"


def test_a_stalled_gang_is_released_after_the_policys_timeout(applied, east_on_fake, fake_kube, notified_team,
                                                              webhook, django_capture_on_commit_callbacks):
    gpu_request, job = applied()
    _partial_gang(fake_kube, job)
    clock = Clock()
    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, clock.at(minutes(16)))
    assert status(gpu_request) == "stalled"

    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, clock.at(minutes(16 + 120)))  # two hours stalled: the training policy releases

    failed = GpuRequest.objects.get(pk=gpu_request.pk)
    assert failed.status == "failed"
    event = failed.events.get(to_status="failed")
    assert event.reason == "GangReleased" and event.comment.startswith("Released after 2 h stalled")
    stall = GangStall.objects.get(request=gpu_request)
    assert (stall.end_reason, stall.released_at, stall.ended_at) == ("released", minutes(136), minutes(136))
    assert stall.burnt_gpu_hours() == 54  # 24 x 135 minutes
    # Torn down: the Job (its pods with it, by owner reference) and the PodGroup are gone from the cluster.
    assert ProvisioningJob.objects.get(request=gpu_request, kind="teardown").status == "succeeded"
    mine = f"gpu-portal.io/request-id={gpu_request.pk}"
    assert fake_kube.find("batch/v1", "Job", None, mine) == [] and fake_kube.find("v1", "Pod", None, mine) == []
    assert fake_kube.find("scheduling.volcano.sh/v1beta1", "PodGroup", None, mine) == []
    # The release is notified too (and only once).
    assert [m.subject.rsplit(": ", 1)[1] for m in mail.outbox] == ["gang stalled", "gang released after stalling"]
    assert [r.body["event"] for r in webhook.received] == ["gang.stalled", "gang.released"]
    reconcile(east_on_fake, clock.at(minutes(200)))
    assert len(mail.outbox) == 2


def test_the_watch_resumes_where_the_last_run_stopped(applied, east_on_fake, fake_kube):
    gpu_request, job = applied()
    pods = [seed(fake_kube, p, k8s.unschedulable(p, minutes(0)))
            for p in (k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4))]
    clock = Clock(minutes(1))

    first = reconcile(east_on_fake, clock, watch_seconds=1)
    state = ClusterReconcileState.objects.get(cluster=east_on_fake)
    assert first.listed and state.resource_version and len(pod_lists(fake_kube)) == 1

    def start_them():  # while the second run watches: the scheduler places all four
        for i, pod in enumerate(pods):
            move(fake_kube, pod, k8s.running(pod, f"gpu-h100-0{i}", minutes(2)))

    timer = threading.Timer(0.3, start_them)
    timer.start()
    second = reconcile(east_on_fake, clock.at(minutes(3)), watch_seconds=2)
    timer.join()

    assert not second.listed and len(pod_lists(fake_kube)) == 1  # no new LIST: the watch resumed
    catch_up, live = pod_watches(fake_kube)[-2:]
    assert (catch_up.params["resourceVersion"], catch_up.params["timeoutSeconds"]) == (state.resource_version, "1")
    assert live.params["timeoutSeconds"] == "2"
    assert second.watch_events == 4 and status(gpu_request) == "running"
    assert ClusterReconcileState.objects.get(cluster=east_on_fake).resource_version != state.resource_version


def test_a_failed_watch_falls_back_to_a_fresh_list(applied, east_on_fake, fake_kube):
    gpu_request, job = applied()
    pods = [seed(fake_kube, p, k8s.unschedulable(p, minutes(0)))
            for p in (k8s.pod_for(job, index=i, created=minutes(0)) for i in range(4))]
    clock = Clock(minutes(1))
    reconcile(east_on_fake, clock, watch_seconds=1)
    first_version = ClusterReconcileState.objects.get(cluster=east_on_fake).resource_version
    for i, pod in enumerate(pods):
        move(fake_kube, pod, k8s.running(pod, f"gpu-h100-0{i}", minutes(2)))
    fake_kube.fail_next("GET", f"^{PODS}$", 410, message="too old resource version: 12 (40)")

    outcome = reconcile(east_on_fake, clock.at(minutes(3)), watch_seconds=1)

    assert outcome.listed and "the watch failed" in outcome.message and "too old resource version" in outcome.message
    assert len(pod_lists(fake_kube)) == 2 and status(gpu_request) == "running"
    assert pod_watches(fake_kube)[1].params["resourceVersion"] == first_version  # the resume that got 410
    state = ClusterReconcileState.objects.get(cluster=east_on_fake)
    assert state.status == "ok" and "listed the pods again" in state.message


def test_a_failed_list_is_recorded_and_changes_nothing(applied, east_on_fake, fake_kube):
    gpu_request, _ = applied()
    fake_kube.fail_next("GET", f"^{PODS}$", 503, message="etcdserver: leader changed")
    outcome = cluster_status_reconcile(cluster_id=east_on_fake.pk, watch_seconds=0, clock=Clock(minutes(1)))
    assert outcome.status == "error" and "etcdserver: leader changed" in outcome.message
    state = ClusterReconcileState.objects.get(cluster=east_on_fake)
    assert state.status == "error" and "could not list pods" in state.message
    assert status(gpu_request) == "provisioning"


def test_two_runs_never_reconcile_the_same_cluster_at_once(applied, east_on_fake, fake_kube):
    from provisioning.reconcile.watch import _lock

    applied()
    held = _lock(east_on_fake, ttl=30)
    assert held.acquire(blocking=False)
    try:
        outcome = cluster_status_reconcile(cluster_id=east_on_fake.pk, watch_seconds=0)
        assert outcome.status == "busy" and pod_lists(fake_kube) == []
    finally:
        held.release()
    assert cluster_status_reconcile(cluster_id=east_on_fake.pk, watch_seconds=0).status == "ok"


def test_the_beat_task_runs_every_cluster_and_skips_gitops_ones_with_a_note(east_on_fake, fake_kube, eager_celery,
                                                                           settings):
    from provisioning.tasks import status_reconcile_all

    settings.PORTAL_RECONCILE_WATCH_SECONDS = 1

    assert status_reconcile_all.apply().get() == 2
    states = {s.cluster.name: s for s in ClusterReconcileState.objects.select_related("cluster")}
    assert states["gpu-east"].status == "ok" and len(pod_lists(fake_kube)) == 1 and len(pod_watches(fake_kube)) == 1
    assert states["gpu-west"].status == "skipped"
    assert "has no API server, so the portal cannot see its pods" in states["gpu-west"].message


def test_the_command_reconciles_one_cluster_or_all(east_on_fake, fake_kube):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("reconcile_status", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("gpu-east: listed 0 pods of 0 active requests; 0 status changes")
    assert lines[1].startswith("gpu-west: skipped — skipped: cluster gpu-west uses the GitOps repository applier")
    out = StringIO()
    call_command("reconcile_status", "--cluster", "gpu-east", "--watch-seconds", "1", stdout=out)
    assert out.getvalue().startswith("gpu-east: resumed the watch on 0 pods")
    with pytest.raises(CommandError, match="No cluster named 'nope'"):
        call_command("reconcile_status", "--cluster", "nope")


def test_notices_are_retried_while_the_webhook_fails_and_given_up_on_a_permanent_error(
    applied, east_on_fake, fake_kube, notified_team, webhook, django_capture_on_commit_callbacks
):
    gpu_request, job = applied()
    _partial_gang(fake_kube, job)
    webhook.answers = [503, 502]  # then 204
    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, Clock(minutes(16)))
    notice = Notice.objects.get(channel="webhook")
    assert (notice.status, notice.attempts, len(webhook.received)) == ("sent", 3, 3)
    assert len(mail.outbox) == 1

    other, other_job = applied("train-2")
    _partial_gang(fake_kube, other_job)
    webhook.answers = [404]
    with django_capture_on_commit_callbacks(execute=True):
        reconcile(east_on_fake, Clock(minutes(16)))
    notice = Notice.objects.get(channel="webhook", gang_stall__request=other)
    assert (notice.status, notice.attempts) == ("failed", 1) and "HTTP 404" in notice.message

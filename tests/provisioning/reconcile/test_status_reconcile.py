"""`status_reconcile`: one cycle applied to the database — transitions through `request_transition`, events once,
stalls with their burnt GPU time, notifications once, and a query count that does not grow with the pods."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from intake.models import GpuRequest, RequestEvent
from portal.models import Notice
from workflows.services import request_cancel
from provisioning.inventory import cluster_declare
from provisioning.models import Cluster, GangPolicy, GangStall
from provisioning.reconcile import status_reconcile
from tests.conftest import VALID_ANSWERS
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import minutes, pods_of, workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def east(inventory):
    return Cluster.objects.get(name="gpu-east")


def cycle(east, pods, now):
    return status_reconcile(cluster=east, pods=pods, now=now)


def status(gpu_request) -> str:
    return GpuRequest.objects.get(pk=gpu_request.pk).status


def partial_gang(gpu_request, *, running_at=minutes(1)):
    """3 of 4 pods running since `running_at`, the fourth Pending (unschedulable) since T0."""
    pods = pods_of(gpu_request)
    moved = [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", running_at)) for i, p in enumerate(pods[:3])]
    return moved + [k8s.moved(pods[3], k8s.unschedulable(pods[3], minutes(0)))], pods


def test_statuses_follow_the_pods_through_request_transition(provision, east):
    gpu_request = provision()
    pods = pods_of(gpu_request)

    cycle(east, [k8s.moved(p, k8s.unschedulable(p, minutes(0))) for p in pods], minutes(1))
    assert status(gpu_request) == "provisioning"
    outcome = cycle(east, [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(2))) for i, p in enumerate(pods)],
                    minutes(3))
    assert outcome.transitions == [(gpu_request.pk, "provisioning", "running")]
    done = [k8s.moved(p, k8s.terminated(p, "n", minutes(2), minutes(50))) for p in pods]
    assert cycle(east, done, minutes(51)).transitions == [(gpu_request.pk, "running", "completed")]

    transitions = list(gpu_request.events.filter(kind="transition").values_list("to_status", "reason", "actor"))
    assert transitions[-2:] == [("running", "AllRunning", None), ("completed", "Completed", None)]
    assert cycle(east, done, minutes(52)).requests == 0  # completed: no longer reconciled


def test_events_are_recorded_once_however_many_cycles_see_them(provision, east):
    gpu_request = provision()
    pods = [k8s.moved(p, k8s.unschedulable(p, minutes(0))) for p in pods_of(gpu_request)]

    first = cycle(east, pods, minutes(1))
    again = cycle(east, pods, minutes(2))

    cluster_events = gpu_request.events.filter(kind="cluster")
    assert (first.events, again.events, cluster_events.count()) == (4, 0, 4)
    assert all(e.reason == "Unschedulable" and "is waiting for a node: 0/12 nodes are available" in e.comment
               for e in cluster_events)


def test_a_cycles_query_count_does_not_grow_with_pods_or_with_quiet_requests(provision, east, engineer):
    def queries(requests, per_request) -> int:
        pods = [k8s.moved(p, k8s.running(p, "n", minutes(1))) for r in requests for p in pods_of(r, per_request)]
        with CaptureQueriesContext(connection) as captured:
            cycle(east, pods, minutes(2))
        return len(captured)

    def serving(name, replicas):
        return provision(name, {**VALID_ANSWERS, "replicas": replicas})

    few = [serving(f"few-{i}", 5) for i in range(2)]
    first_10, quiet_10 = queries(few, 5), queries(few, 5)  # two requests become running, then nothing changes
    for gpu_request in few:
        request_cancel(user=engineer, request_id=gpu_request.pk)
    # 100 replicas each: a pool that can hold them (the decision skips pools that never could).
    cluster_declare(name="gpu-east", pools=[{"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 8}])
    many = [serving(f"many-{i}", 100) for i in range(2)]
    first_200, quiet_200 = queries(many, 100), queries(many, 100)

    assert first_10 == first_200 and quiet_10 == quiet_200 <= 8, (first_10, first_200, quiet_10, quiet_200)
    more = many + [serving(f"more-{i}", 5) for i in range(10)]
    queries(more, 5)
    assert queries(more, 5) == quiet_200  # twelve quiet requests cost what two cost


def test_a_stalled_gang_is_notified_once_and_its_burnt_time_is_exact(
    provision, east, notified_team, webhook, eager_celery, django_capture_on_commit_callbacks
):
    gpu_request = provision()
    pods, _ = partial_gang(gpu_request)

    with django_capture_on_commit_callbacks(execute=True):
        cycle(east, pods, minutes(10))
    assert status(gpu_request) == "provisioning" and not mail.outbox

    with django_capture_on_commit_callbacks(execute=True):
        outcome = cycle(east, pods, minutes(16))
    assert outcome.transitions == [(gpu_request.pk, "provisioning", "stalled")] and outcome.stalls_opened == 1
    stall = GangStall.objects.get(request=gpu_request)
    assert (stall.started_at, stall.detected_at, stall.running_pods, stall.pending_pods) == (
        minutes(1), minutes(16), 3, 1)
    assert stall.gpu_equivalents_running == Decimal("24") and stall.notified_at == minutes(16)
    assert stall.pending_detail[0]["reason"] == "Unschedulable"

    # Notified once: one e-mail to the team and the platform team, one webhook POST.
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["team-a@example.com", "gpu-platform@example.com"]
    assert message.subject == f"[GPU portal] team-a/train (request #{gpu_request.pk}): gang stalled"
    assert "3 of 4 pods of the gang are running while 1 has been Pending for 15 min" in message.body
    assert "0/12 nodes are available: 4 Insufficient nvidia.com/gpu" in message.body
    assert f"https://portal.example.com/requests/{gpu_request.pk}/" in message.body
    assert len(webhook.received) == 1
    hook = webhook.received[0]
    assert hook.headers["Content-Type"] == "application/json" and hook.body["event"] == "gang.stalled"
    assert hook.body["request"] == {"id": gpu_request.pk, "name": "train", "team": "team-a",
                                    "workload_class": "training",
                                    "url": f"https://portal.example.com/requests/{gpu_request.pk}/"}
    assert hook.body["stall"]["running_pods"] == 3 and hook.body["stall"]["gpu_equivalents_running"] == "24.000000"
    assert hook.body["stall"]["burnt_gpu_equivalent_seconds"] == "21600.000000"  # 24 x 15 min
    assert set(Notice.objects.values_list("channel", "status")) == {("email", "sent"), ("webhook", "sent")}

    for later in (20, 25):  # still stalled: nothing new is sent
        with django_capture_on_commit_callbacks(execute=True):
            cycle(east, pods, minutes(later))
    assert (len(mail.outbox), len(webhook.received), status(gpu_request)) == (1, 1, "stalled")

    # The fourth pod starts at minute 30: the gang is whole, the request runs, the stall is closed.
    whole = pods[:3] + [k8s.moved(pods[3], k8s.running(pods[3], "gpu-h100-09", minutes(30)))]
    with django_capture_on_commit_callbacks(execute=True):
        outcome = cycle(east, whole, minutes(30))
    assert outcome.transitions == [(gpu_request.pk, "stalled", "running")] and outcome.stalls_closed == 1
    stall.refresh_from_db()
    assert (stall.ended_at, stall.end_reason) == (minutes(30), "recovered")
    # 24 GPU-equivalents x 29 minutes, exactly, in Python and in SQL.
    assert stall.burnt_gpu_seconds() == Decimal(24 * 29 * 60)
    assert GangStall.objects.with_burnt(minutes(99)).get(pk=stall.pk).burnt_gpu_seconds == Decimal(24 * 29 * 60)
    assert stall.burnt_gpu_hours() == Decimal("11.6")
    assert gpu_request.events.filter(reason="GangStallEnded", comment__contains="11.6 GPU-hours").exists()
    assert len(mail.outbox) == 1 and len(webhook.received) == 1


def test_when_the_running_pods_change_during_a_stall_each_stretch_is_priced_with_what_ran(provision, east):
    gpu_request = provision()
    pods, raw = partial_gang(gpu_request)
    cycle(east, pods, minutes(16))
    # Minute 20: one running pod is evicted; its replacement waits too. Two pods (16 equivalents) still run.
    replacement = k8s.pod_for(workload(gpu_request), index=2, created=minutes(20), attempt=1)
    later = pods[:2] + [k8s.moved(raw[2], k8s.evicted(raw[2], "gpu-h100-02", minutes(1), minutes(20))),
                        k8s.moved(replacement, k8s.unschedulable(replacement, minutes(20))), pods[3]]
    cycle(east, later, minutes(20))
    stall = GangStall.objects.get(request=gpu_request)
    assert (stall.running_pods, stall.pending_pods, stall.segment_started_at) == (2, 2, minutes(20))
    assert stall.burnt_before_segment == Decimal(24 * 19 * 60)
    assert cycle(east, later, minutes(25)).transitions == []  # same stretch: nothing written
    cycle(east, [], minutes(26))  # the pods are gone (deleted by hand): nothing burns from now on...
    stall.refresh_from_db()
    assert stall.is_open and stall.gpu_equivalents_running == 0  # ...but the gang is not whole: still stalled

    with_burnt = GangStall.objects.with_burnt(minutes(30)).get(pk=stall.pk).burnt_gpu_seconds
    assert with_burnt == stall.burnt_gpu_seconds(minutes(30)) == Decimal(24 * 19 * 60 + 16 * 6 * 60)


def test_the_stall_threshold_comes_from_the_workload_classs_policy(provision, east):
    GangPolicy.objects.filter(workload_class="training").update(stall_after_seconds=40 * 60)
    gpu_request = provision()
    pods, _ = partial_gang(gpu_request)
    cycle(east, pods, minutes(30))
    assert status(gpu_request) == "provisioning"
    cycle(east, pods, minutes(41))
    assert status(gpu_request) == "stalled"


def test_cancelling_a_stalled_request_ends_its_stall_at_the_cancel(provision, east, engineer):
    gpu_request = provision()
    pods, _ = partial_gang(gpu_request)
    cycle(east, pods, minutes(16))
    request_cancel(user=engineer, request_id=gpu_request.pk)
    cancelled_at = GpuRequest.objects.get(pk=gpu_request.pk).status_changed_at

    cycle(east, pods, max(minutes(40), cancelled_at))
    stall = GangStall.objects.get(request=gpu_request)
    assert (stall.end_reason, stall.ended_at) == ("cancelled", max(cancelled_at, stall.segment_started_at))


def test_nobody_to_notify_is_said_on_the_request(provision, east, settings):
    settings.PLATFORM_NOTIFICATION_EMAIL = []
    gpu_request = provision()
    pods, _ = partial_gang(gpu_request)
    cycle(east, pods, minutes(16))
    assert Notice.objects.count() == 0
    assert gpu_request.events.filter(reason="NobodyToNotify").exists()


def test_a_request_with_no_pods_fails_after_the_timeout(provision, east, settings):
    settings.PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS = 3600
    gpu_request = provision()
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status_changed_at=minutes(0))

    cycle(east, [], minutes(30))
    assert (status(gpu_request), GpuRequest.objects.get(pk=gpu_request.pk).pods_missing_since) == (
        "provisioning", minutes(0))
    cycle(east, [], minutes(61))
    failed = GpuRequest.objects.get(pk=gpu_request.pk)
    assert failed.status == "failed"
    event = failed.events.get(to_status="failed")
    assert event.reason == "NoPods" and "No pod of this request appeared on the cluster within 1 h" in event.comment


def test_pods_of_requests_the_portal_no_longer_reconciles_are_ignored(provision, east, engineer):
    gpu_request = provision()
    request_cancel(user=engineer, request_id=gpu_request.pk)
    pods = [k8s.moved(p, k8s.running(p, "n", minutes(1))) for p in pods_of(gpu_request)]
    outcome = cycle(east, pods, minutes(2))
    assert (outcome.requests, outcome.ignored_pods, outcome.events) == (0, 4, 0)
    assert not RequestEvent.objects.filter(request=gpu_request, kind="cluster").exists()


def test_a_request_cancelled_while_the_cycle_runs_skips_only_itself(provision, east, engineer, monkeypatch):
    from provisioning.reconcile import cycle as reconcile_cycle

    first, second = provision("first"), provision("second")
    loaded = reconcile_cycle._active_chunks

    def load_then_cancel(cluster, request_ids):
        for requests in loaded(cluster, request_ids):  # as the cycle saw them...
            request_cancel(user=engineer, request_id=first.pk)  # ...then the engineer cancels one
            yield requests

    monkeypatch.setattr(reconcile_cycle, "_active_chunks", load_then_cancel)
    pods = [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(1)))
            for r in (first, second) for i, p in enumerate(pods_of(r))]
    outcome = cycle(east, pods, minutes(2))

    assert outcome.transitions == [(second.pk, "provisioning", "running")]
    assert (status(first), status(second)) == ("cancelled", "running")


def test_notices_whose_dispatch_was_lost_are_sent_by_the_sweep(provision, east, notified_team, webhook, eager_celery):
    from django.utils import timezone

    from portal.notices import notices_sweep

    gpu_request = provision()
    pods, _ = partial_gang(gpu_request)
    cycle(east, pods, minutes(16))  # in a test transaction the after-commit dispatch never runs: the broker "lost" it
    assert set(Notice.objects.values_list("status", flat=True)) == {"queued"}
    assert notices_sweep() == 0  # too fresh: its own dispatch may be on its way

    Notice.objects.update(created_at=timezone.now() - timezone.timedelta(minutes=5))
    assert notices_sweep() == 2
    assert set(Notice.objects.values_list("status", flat=True)) == {"sent"}
    assert (len(mail.outbox), len(webhook.received)) == (1, 1)
    assert notices_sweep() == 0

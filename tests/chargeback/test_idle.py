"""Idle GPUs through a real Prometheus: the fake cluster's pods are collected over HTTPS, a DCGM exporter stub
serves their utilisation, Debian's Prometheus scrapes it every second, and the portal's scan queries Prometheus
over HTTP; the notices' own tests need no Prometheus (an episode, then the beat task). Given / when / then per
test; no sleeps, only bounded polls for samples."""
from __future__ import annotations

import csv
import io
from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from chargeback.idle.rules import IDLE_DEFAULTS
from chargeback.idle.services import idle_notify
from chargeback.models import IdleAllocation, IdlePolicy, IdleScan, RateCard, UsageInterval
from chargeback.tasks import idle_scan_all, usage_collect
from intake.models import RequestEvent
from portal.models import Notice
from portal.tasks import outbox_sweep
from portal.webhooks import secret_generate, signature
from tests.chargeback.conftest import make_request, pod_for
from intake.services import request_evaluate
from tests.conftest import VALID_ANSWERS, client_for
from tests.support.prometheus import Device, start_dcgm_stub, start_prometheus, stop_prometheus

pytestmark = pytest.mark.django_db


@pytest.fixture
def dcgm_stub():
    stub = start_dcgm_stub()
    yield stub
    stub.server.shutdown()


@pytest.fixture
def prometheus(dcgm_stub):
    server = start_prometheus(dcgm_stub)
    yield server
    stop_prometheus(server)


@pytest.fixture
def idle_settings(settings):
    settings.PORTAL_IDLE_LOOKBACK_SECONDS = 20
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    for workload_class, release in (("development", 0), ("inference", None), ("training", None)):
        IdlePolicy.objects.create(workload_class=workload_class, threshold_percent=Decimal("5"),
                                  idle_after_seconds=4, release_after_seconds=release)
    return settings


def _rate_cards():
    for strategy, price in (("whole_gpu", "2.5000"), ("mig", "2.5000")):
        RateCard.objects.create(gpu_model="H100-80GB", strategy=strategy, price_per_equivalent_hour=Decimal(price),
                                currency="EUR", valid_from=date(2026, 1, 1))


def _register(fake_kube, prometheus_url: str = "") -> None:
    args = ["register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
            "--ca-cert-file", fake_kube.ca_file]
    if prometheus_url:
        args += ["--prometheus-url", prometheus_url]
    call_command(*args, stdout=StringIO())


def _running(fake_kube, gpu_request, workload_class: str) -> dict:
    gpu_request.workload_class = workload_class
    gpu_request.save(update_fields=["workload_class"])
    pod = pod_for(gpu_request, started_at=timezone.now() - timedelta(hours=1), workload_class=workload_class)
    fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": pod["metadata"]["namespace"]}})
    fake_kube.put(pod)
    return pod


def _device(pod: dict, *, utilisation: float, fb_used_mib: int, gpu: int = 0) -> Device:
    meta = pod["metadata"]
    return Device(namespace=meta["namespace"], pod=meta["name"], gpu=gpu, uuid=f"GPU-{meta['uid'][:8]}-{gpu}",
                  utilisation=utilisation, fb_used_mib=fb_used_mib, fb_free_mib=81559 - fb_used_mib)


@pytest.fixture
def idle_fleet(inventory, team_a, engineer, fake_kube, prometheus, dcgm_stub, webhook, idle_settings):
    """gpu-east on the fake API server with its Prometheus; three running whole-H100 requests of team A: a
    development notebook idling at 1% with 6 GB used, an idle inference server, and a busy training job."""
    team_a.notification_email = "team-a@example.com"
    team_a.webhook_url = webhook.url
    team_a.webhook_secret = secret_generate()
    team_a.save()
    engineer.email = "eve@example.com"
    engineer.save()
    _rate_cards()
    _register(fake_kube, prometheus.url)
    requests = {
        "notebook": make_request(team_a, engineer, name="notebook"),
        "server": make_request(team_a, engineer, name="server"),
        "train": make_request(team_a, engineer, name="train"),
    }
    pods = {
        "notebook": _running(fake_kube, requests["notebook"], "development"),
        "server": _running(fake_kube, requests["server"], "inference"),
        "train": _running(fake_kube, requests["train"], "training"),
    }
    usage_collect("gpu-east")
    assert UsageInterval.objects.filter(ended_at__isnull=True).count() == 3
    dcgm_stub.set(_device(pods["notebook"], utilisation=1, fb_used_mib=6 * 1024))
    dcgm_stub.set(_device(pods["server"], utilisation=0, fb_used_mib=30 * 1024))
    dcgm_stub.set(_device(pods["train"], utilisation=90, fb_used_mib=70 * 1024))
    # Bounded poll: at least 8 s of one-second samples of every pod (idle_after is 4 s, steps are 2 s).
    prometheus.wait_for("count_over_time(DCGM_FI_DEV_GPU_UTIL[20s])", minimum=9, series=3)
    return requests, pods


def test_an_idle_pod_is_flagged_notified_released_where_the_policy_says_and_booked_as_idle(
        idle_fleet, webhook, dcgm_stub, prometheus, eager_celery, django_capture_on_commit_callbacks):
    """Given three running requests whose pods Prometheus has scraped from the DCGM stub for several seconds, when
    the beat task scans, then the idle development notebook and the idle inference server are flagged and their
    owners told once (e-mail and a signed webhook); only the development one is released through the cancel
    path with an event saying why; the busy training job is left alone; the idle time is its own category; and
    when the server gets busy again its episode ends."""
    requests, pods = idle_fleet

    with django_capture_on_commit_callbacks(execute=True):
        [scan_id] = idle_scan_all()

    scan = IdleScan.objects.get(pk=scan_id)
    assert (scan.status, scan.requests_read, scan.flagged, scan.released) == ("ok", 3, 2, 1), scan.message
    for key in requests:
        requests[key].refresh_from_db()
    assert requests["notebook"].status == "cancelled"
    assert requests["server"].status == "running" and requests["train"].status == "running"
    released = RequestEvent.objects.get(request=requests["notebook"], reason="IdleReleased")
    assert "idle (below 5%)" in released.comment and "development policy releases idle GPUs" in released.comment
    assert RequestEvent.objects.filter(request=requests["server"], reason="IdleFlagged").count() == 1
    assert not IdleAllocation.objects.filter(request=requests["train"]).exists()

    # Notified once each: two e-mails (owner and team address), two signed webhook posts.
    assert sorted(m.subject for m in mail.outbox) == sorted(
        f"[GPU portal] team-a/{name} (request #{requests[name].pk}): GPUs idle" for name in ("notebook", "server"))
    assert set(mail.outbox[0].to) == {"eve@example.com", "team-a@example.com"}
    assert sorted(r.body["request"]["name"] for r in webhook.received) == ["notebook", "server"]
    secret = requests["server"].team.webhook_secret
    for received in webhook.received:
        stamp, _, mac = received.headers["X-Portal-Signature"].partition(",v1=")
        assert mac == signature(secret, int(stamp.removeprefix("t=")), received.raw)
        assert received.body["event"] == "gpu.idle"
    episodes = IdleAllocation.objects.filter(request__in=[requests["notebook"], requests["server"]])
    assert set(Notice.objects.values_list("key", "channel", "status")) == {
        (f"idle:{episode.pk}", channel, "sent") for episode in episodes for channel in ("email", "webhook")}

    # Idle GPU time is booked as its own category, from the idle start to the scan.
    server_idle = UsageInterval.objects.get(request=requests["server"], category="idle")
    episode = IdleAllocation.objects.get(request=requests["server"])
    assert (server_idle.started_at, server_idle.ended_at) == (episode.idle_since, episode.marked_until)
    assert timedelta(seconds=4) <= episode.marked_until - episode.idle_since <= timedelta(seconds=22)

    # A second scan notifies nobody again and keeps booking the still-idle server.
    outbox, posts = len(mail.outbox), len(webhook.received)
    with django_capture_on_commit_callbacks(execute=True):
        idle_scan_all()
    assert (len(mail.outbox), len(webhook.received)) == (outbox, posts)
    assert IdleAllocation.objects.filter(request=requests["server"]).count() == 1
    booked_until = IdleAllocation.objects.get(request=requests["server"]).marked_until
    assert booked_until > episode.marked_until

    # Busy again: the episode ends and nothing after the last idle scan is booked.
    server_pod = pods["server"]["metadata"]["name"]
    dcgm_stub.set(_device(pods["server"], utilisation=80, fb_used_mib=30 * 1024))
    prometheus.wait_for(f'max_over_time(DCGM_FI_DEV_GPU_UTIL{{pod="{server_pod}"}}[3s])', minimum=80)
    with django_capture_on_commit_callbacks(execute=True):
        idle_scan_all()
    episode.refresh_from_db()
    assert (episode.end_reason, episode.marked_until) == ("active", booked_until)
    assert RequestEvent.objects.filter(request=requests["server"], reason="IdleEnded").count() == 1


@pytest.fixture
def idle_episode(team_a, engineer, webhook, idle_settings):
    """A running development request of team A, idle for three hours and flagged now; the team has an e-mail
    address and a signed webhook, the requester an e-mail address."""
    team_a.notification_email, team_a.webhook_url, team_a.webhook_secret = ("team-a@example.com", webhook.url,
                                                                            secret_generate())
    team_a.save()
    engineer.email = "eve@example.com"
    engineer.save()
    gpu_request = make_request(team_a, engineer, name="notebook")
    now = timezone.now()
    return IdleAllocation.objects.create(
        request=gpu_request, cluster="gpu-east", workload_class="development", idle_since=now - timedelta(hours=3),
        detected_at=now, threshold_percent=Decimal("5"), peak_utilisation_percent=Decimal("1"))


def test_idle_notices_are_portal_notices_sent_once_and_swept_when_their_dispatch_was_lost(
        idle_episode, webhook, platform_user, eager_celery, django_capture_on_commit_callbacks):
    """Given an idle episode whose notices were queued but whose dispatch never reached a worker, when beat's sweep
    of every outbox runs, then it sends both (one e-mail to the owner and the team,
    one signed webhook), each once, and the admin shows them on the episode."""
    rule = IDLE_DEFAULTS["development"]
    with django_capture_on_commit_callbacks(execute=False) as lost:
        queued = idle_notify(allocation=idle_episode, rule=rule, now=idle_episode.detected_at)
    assert len(queued) == 2 and len(lost) == 1
    key = f"idle:{idle_episode.pk}"
    assert set(Notice.objects.values_list("key", "channel", "status")) == {
        (key, "email", "queued"), (key, "webhook", "queued")}
    assert idle_notify(allocation=idle_episode, rule=rule, now=timezone.now()) == []  # once per episode
    assert (len(mail.outbox), len(webhook.received)) == (0, 0)

    Notice.objects.update(created_at=timezone.now() - timedelta(minutes=10))  # older than the sweep waits
    for _ in range(2):  # the second beat run finds nothing left to send
        with django_capture_on_commit_callbacks(execute=True):
            outbox_sweep.apply().get()

    assert set(Notice.objects.values_list("status", "attempts")) == {("sent", 1)}
    [message] = mail.outbox
    assert set(message.to) == {"eve@example.com", "team-a@example.com"}
    assert message.subject == f"[GPU portal] team-a/notebook (request #{idle_episode.request_id}): GPUs idle"
    [hook] = webhook.received
    assert hook.body["event"] == "gpu.idle" and hook.body["request"]["id"] == idle_episode.request_id
    assert hook.headers["X-Portal-Event"] == "gpu.idle"
    stamp, _, mac = hook.headers["X-Portal-Signature"].partition(",v1=")
    assert mac == signature(idle_episode.request.team.webhook_secret, int(stamp.removeprefix("t=")), hook.raw)

    admin = Client()
    admin.force_login(platform_user)
    page = admin.get(f"/admin/chargeback/idleallocation/{idle_episode.pk}/change/").content.decode()
    assert "email: sent, webhook: sent" in page and f"/admin/portal/notice/?key=idle%3A{idle_episode.pk}" in page
    listed = admin.get("/admin/portal/notice/", {"key": key})
    assert listed.status_code == 200 and listed.context["cl"].result_count == 2


def test_an_episode_with_nobody_to_tell_queues_no_notice_and_says_so(idle_episode, webhook):
    """Given an idle episode of a team with no e-mail address, no webhook and a requester without e-mail, when it is
    notified, then no notice is queued and the request's history says nobody could be told."""
    team = idle_episode.request.team
    team.notification_email, team.webhook_url = "", ""
    team.save()
    idle_episode.request.requested_by.email = ""
    idle_episode.request.requested_by.save()

    assert idle_notify(allocation=idle_episode, rule=IDLE_DEFAULTS["development"], now=timezone.now()) == []

    assert not Notice.objects.exists()
    assert RequestEvent.objects.filter(request=idle_episode.request, reason="NobodyToNotify").count() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_migration_moves_idle_notifications_onto_portal_notices_and_back(idle_episode):
    """Given idle notifications stored before migration 0010 (one sent, one waiting for a retry), when the
    migration runs, then they are portal notices keyed by their episode, with their times kept and the waiting
    one queued for the sweep; migrating back restores them."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate([("chargeback", "0009_idle_gpus")])
    old_apps = executor.loader.project_state([("chargeback", "0009_idle_gpus")]).apps
    IdleNotification = old_apps.get_model("chargeback", "IdleNotification")
    created = timezone.now() - timedelta(days=2)
    for channel, status, attempts in (("email", "sent", 1), ("webhook", "retrying", 3)):
        row = IdleNotification.objects.create(
            allocation_id=idle_episode.pk, channel=channel, target="somewhere", payload={"event": "gpu.idle"},
            status=status, attempts=attempts, message="", sent_at=created if status == "sent" else None)
        IdleNotification.objects.filter(pk=row.pk).update(created_at=created)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    key = f"idle:{idle_episode.pk}"
    assert set(Notice.objects.values_list("key", "team_id", "channel", "status", "attempts", "created_at")) == {
        (key, idle_episode.request.team_id, "email", "sent", 1, created),
        (key, idle_episode.request.team_id, "webhook", "queued", 3, created)}
    assert "chargeback_idlenotification" not in connection.introspection.table_names()

    executor = MigrationExecutor(connection)
    executor.migrate([("chargeback", "0009_idle_gpus")])
    restored = executor.loader.project_state([("chargeback", "0009_idle_gpus")]).apps.get_model(
        "chargeback", "IdleNotification")
    assert set(restored.objects.values_list("allocation_id", "channel", "status", "created_at")) == {
        (idle_episode.pk, "email", "sent", created), (idle_episode.pk, "webhook", "queued", created)}
    assert not Notice.objects.filter(key=key).exists()
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_idle_hours_are_their_own_line_in_the_report_and_the_csv(idle_fleet, finance_user, eager_celery):
    """Given the scan booked idle time, when finance reads the report and the CSV for the month, then `idle` is a
    line of its own ("paid for, unused") next to usage, rounded like every other line."""
    requests, _ = idle_fleet
    idle_scan_all()
    today = timezone.now().date()
    start, end = today.replace(day=1), today + timedelta(days=1)
    client = client_for(finance_user)

    answer = client.get("/api/v1/chargeback/report/", {"start": start, "end": end, "group_by": "request"})

    assert answer.status_code == 200, answer.content
    rows = answer.json()["rows"]
    idle = [r for r in rows if r["category"] == "idle"]
    assert {r["request"] for r in idle} == {requests["notebook"].pk, requests["server"].pk}
    # One whole GPU each: the idle hours are the booked windows, rounded to 6 places like every row.
    hours = sum(Decimal(r["gpu_equivalent_hours"]) for r in idle)
    booked = Decimal(str(sum((e.marked_until - e.idle_since).total_seconds() for e in IdleAllocation.objects.all())))
    assert hours > 0 and abs(hours - booked / 3600) <= Decimal("0.000002")
    assert all(r["currency"] == "EUR" and Decimal(r["cost"]) >= 0 for r in idle)
    text = b"".join(client.get("/api/v1/chargeback/report/", {
        "start": start, "end": end, "group_by": "request", "format": "csv"}).streaming_content).decode()
    categories = {row.get("category") for row in csv.DictReader(io.StringIO(text))}
    assert {"usage", "idle"} <= categories


def test_a_cluster_without_prometheus_is_skipped_and_the_register_says_so(inventory, fake_kube, platform_user):
    """Given a cluster registered without --prometheus-url, when the scan runs, then nothing is read and the
    register's coverage says idle GPUs are not looked for there."""
    _register(fake_kube)

    assert idle_scan_all() == []

    register = client_for(platform_user).get("/api/v1/register/")
    assert register.status_code == 200
    assert "idle GPUs are not looked for on this cluster" in str(register.json())


def test_prometheus_that_cannot_be_reached_is_recorded_on_the_scan(inventory, fake_kube, idle_settings, team_a,
                                                                  engineer):
    """Given a cluster whose Prometheus URL answers nothing, when the scan runs, then the scan row says why."""
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _register(fake_kube, f"http://127.0.0.1:{port}")
    _running(fake_kube, make_request(team_a, engineer, name="nb"), "development")
    usage_collect("gpu-east")

    assert idle_scan_all() == []

    scan = IdleScan.objects.get()
    assert scan.status == "failed" and "could not reach Prometheus" in scan.message


def test_a_right_sizing_suggestion_with_its_saving_on_the_api_and_the_page(idle_fleet, engineer, engineer_b,
                                                                          eager_celery):
    """Given the scan measured the notebook (peak 6 GB of an 80 GB H100, about 1% busy), when its owner asks, then
    the API and the request page suggest a 1g.10gb slice with the monthly saving at today's rate cards (EUR 2.50
    per GPU-equivalent-hour for both: 730 h x (1 - 1/7) x 2.50 = EUR 1,564), and the re-request link opens the
    questionnaire pre-filled; another team's engineer sees nothing of it."""
    requests, _ = idle_fleet
    idle_scan_all()
    notebook = requests["notebook"]

    answer = client_for(engineer).get(f"/api/v1/requests/{notebook.pk}/rightsizing/")

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["available"] is True and body["mig_profile"] == "1g.10gb"
    assert (body["monthly_saving"], body["currency"]) == ("1564", "EUR")
    assert body["text"] == ("peak 6 GB of 80 GB, median utilisation 1%: a 1g.10gb MIG slice would serve it for "
                            "about EUR 1,564 a month less")
    assert body["observed"]["peak_memory_used_mib"] == 6144
    busy = client_for(engineer).get(f"/api/v1/requests/{requests['train'].pk}/rightsizing/").json()
    assert busy["available"] is False and "Nothing smaller" in busy["why"]
    assert client_for(engineer_b).get(f"/api/v1/requests/{notebook.pk}/rightsizing/").status_code == 404

    # The page renders the whole decision: give the fixture's short one the rest of a real decision.
    evaluation = request_evaluate(raw_answers=VALID_ANSWERS)
    short = notebook.decision
    notebook.decision = replace(evaluation.decision, strategy=short.strategy, gpu_model=short.gpu_model,
                                mig_profile=short.mig_profile, cluster=short.cluster, node_pool=short.node_pool,
                                gpus_per_replica=short.gpus_per_replica, replicas=short.replicas)
    notebook.answers = dict(evaluation.answers.values)
    notebook.save(update_fields=["decision", "answers"])
    web = Client()
    web.force_login(engineer)
    page = web.get(f"/requests/{notebook.pk}/").content.decode()
    assert "a 1g.10gb MIG slice would serve it for about EUR 1,564 a month less" in page
    assert body["rerequest_url"] == f"/requests/new/?from={notebook.pk}&gpu_memory_gb=8"
    form = web.get(body["rerequest_url"]).content.decode()
    assert 'value="notebook-resized"' in form
    assert 'name="gpu_memory_gb"' in form and 'value="8"' in form

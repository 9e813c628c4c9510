"""/metrics: families computed from the database at scrape time, after a scripted scenario; the optional bearer
token; the registration mechanism other apps plug their families into."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from intake.choices import RequestStatus
from intake.models import RequestEvent
from intake.services import request_transition
from workflows.services import request_approve, request_reject, request_submit
from portal import metrics
from provisioning.inventory import team_quota_set
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


TOKEN = "metrics-test-token"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.METRICS_TOKEN = TOKEN


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {TOKEN}")
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


def backdate_submission(gpu_request, seconds):
    """The request was submitted `seconds` before its decision (events are stamped by the database clock)."""
    RequestEvent.objects.filter(request=gpu_request, to_status=RequestStatus.PENDING_APPROVAL).update(
        at=timezone.now() - timedelta(seconds=seconds)
    )


@pytest.fixture
def scenario(inventory, engineer, team_a, platform_user, platform_user_2):
    """Five requests: two MIG inference (one approved after 2 h, one rejected after 10 min), a development
    notebook auto-approved, a gang training run that stalled, and one still pending for a day."""
    approved = request_submit(user=engineer, team=team_a, name="serve-a", raw_answers=VALID_ANSWERS)
    backdate_submission(approved, 2 * 3600)
    request_approve(user=platform_user, request_id=approved.pk, comment="ok")

    rejected = request_submit(user=engineer, team=team_a, name="serve-b", raw_answers=VALID_ANSWERS)
    backdate_submission(rejected, 600)
    request_reject(user=platform_user, request_id=rejected.pk, comment="use serve-a")

    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=1)  # the rule approves only with a quota
    notebook = request_submit(user=engineer, team=team_a, name="nb", raw_answers={
        "workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
        "image": "jupyter/base-notebook:latest"})

    gang = request_submit(user=engineer, team=team_a, name="train", raw_answers={
        "workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
        "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3"})
    request_approve(user=platform_user_2, request_id=gang.pk)
    for status in (RequestStatus.PROVISIONING, RequestStatus.RUNNING, RequestStatus.STALLED):
        request_transition(request_id=gang.pk, to_status=status, actor=None)

    waiting = request_submit(user=engineer, team=team_a, name="serve-c", raw_answers=VALID_ANSWERS)
    type(waiting).objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(days=1))
    return {"approved": approved, "rejected": rejected, "notebook": notebook, "gang": gang, "waiting": waiting}


def test_metrics_after_a_scripted_scenario(client, scenario):
    samples = scrape(client)

    # requests by status and strategy (zero-filled)
    assert value(samples, "gpu_portal_requests", status="approved", strategy="mig") == 1
    assert value(samples, "gpu_portal_requests", status="rejected", strategy="mig") == 1
    assert value(samples, "gpu_portal_requests", status="pending_approval", strategy="mig") == 1
    assert value(samples, "gpu_portal_requests", status="approved", strategy="time_slicing") == 1
    assert value(samples, "gpu_portal_requests", status="stalled", strategy="whole_gpu") == 1
    assert value(samples, "gpu_portal_requests", status="running", strategy="whole_gpu") == 0

    # decisions by policy version and rule
    assert value(samples, "gpu_portal_decisions_total", policy_version="1", rule="inference-shared-latency") == 3
    assert value(samples, "gpu_portal_decisions_total", policy_version="1", rule="development-standard") == 1
    assert value(samples, "gpu_portal_decisions_total", policy_version="1", rule="training-dedicated-batch") == 1

    # approval latency: person-approved after ~2 h and immediately (the gang), rejected after ~10 min
    approved = dict(outcome="approved", decided_by="person")
    assert value(samples, "gpu_portal_approval_latency_seconds_count", **approved) == 2
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="60.0", **approved) == 1
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="3600.0", **approved) == 1
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="14400.0", **approved) == 2
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="+Inf", **approved) == 2
    assert 7190 < value(samples, "gpu_portal_approval_latency_seconds_sum", **approved) < 7300
    rejected = dict(outcome="rejected", decided_by="person")
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="300.0", **rejected) == 0
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="900.0", **rejected) == 1
    auto = dict(outcome="approved", decided_by="policy")
    assert value(samples, "gpu_portal_approval_latency_seconds_bucket", le="60.0", **auto) == 1

    # the oldest pending request waited a day; one gang is stalled
    assert 86000 < value(samples, "gpu_portal_oldest_pending_approval_seconds") < 86800
    assert value(samples, "gpu_portal_stalled_gangs", team="team-a") == 1
    assert value(samples, "gpu_portal_stalled_gang_longest_seconds", team="team-a") < 60

    # every registered collector ran
    for name in ("intake.requests", "intake.decisions", "intake.approval_latency", "intake.pending_and_stalled",
                 "portal.worker_heartbeat"):
        assert value(samples, "gpu_portal_collector_up", collector=name) == 1


def test_metrics_are_computed_at_scrape_time_from_the_database(client, scenario, engineer):
    before = value(scrape(client), "gpu_portal_requests", status="cancelled", strategy="mig")
    # Another process (here: a direct service call) changes the database; the next scrape sees it.
    from workflows.services import request_cancel

    request_cancel(user=engineer, request_id=scenario["waiting"].pk)
    after = scrape(client)
    assert (before, value(after, "gpu_portal_requests", status="cancelled", strategy="mig")) == (0, 1)
    assert value(after, "gpu_portal_oldest_pending_approval_seconds") == 0


def test_metrics_token_is_required_when_configured(client, settings):
    settings.METRICS_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Token s3cret-token").status_code == 401
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert response.status_code == 200 and b"gpu_portal_requests" in response.content


def test_without_a_token_metrics_are_closed_in_production_and_open_on_a_debug_server(client, settings):
    settings.METRICS_TOKEN = ""
    settings.DEBUG = False
    response = client.get("/metrics")
    assert response.status_code == 403 and b"METRICS_TOKEN" in response.content
    settings.DEBUG = True
    assert client.get("/metrics").status_code == 200


def test_openmetrics_is_served_when_prometheus_asks_for_it(client):
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0",
                          HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


def test_an_app_registers_a_collector_and_a_broken_one_does_not_break_the_scrape(client):
    def provisioning_jobs():
        family = GaugeMetricFamily("gpu_portal_example_jobs", "example", labels=["status"])
        family.add_metric(["failed"], 3)
        yield family

    def broken():
        raise RuntimeError("table does not exist yet")

    metrics.register("example.jobs", provisioning_jobs)
    metrics.register("example.broken", broken)
    try:
        samples = scrape(client)
    finally:
        metrics.unregister("example.jobs")
        metrics.unregister("example.broken")
    assert value(samples, "gpu_portal_example_jobs", status="failed") == 3
    assert value(samples, "gpu_portal_collector_up", collector="example.jobs") == 1
    assert value(samples, "gpu_portal_collector_up", collector="example.broken") == 0
    assert value(samples, "gpu_portal_requests", status="running", strategy="mig") == 0
    assert "example.jobs" not in metrics.registered()


def test_worker_heartbeat_age_appears_once_a_worker_pinged(client):
    from django.core.cache import cache

    from portal.services import WORKER_HEARTBEAT_CACHE_KEY, worker_heartbeat_record

    cache.delete(WORKER_HEARTBEAT_CACHE_KEY)
    assert not any(name == "gpu_portal_worker_heartbeat_age_seconds" for name, _ in scrape(client))
    worker_heartbeat_record(worker="celery@w1", task_id="t1", request_id="r1")
    assert 0 <= value(scrape(client), "gpu_portal_worker_heartbeat_age_seconds") < 5


def test_worker_heartbeat_command_fails_when_the_heartbeat_is_missing_or_old():
    from django.core.cache import cache
    from django.core.management import CommandError, call_command

    from portal.services import WORKER_HEARTBEAT_CACHE_KEY, worker_heartbeat_record

    cache.delete(WORKER_HEARTBEAT_CACHE_KEY)
    with pytest.raises(CommandError, match="no worker heartbeat"):
        call_command("worker_heartbeat")
    worker_heartbeat_record(worker="celery@w1", task_id="t1", request_id="r1")
    call_command("worker_heartbeat", "--max-age", "60")
    with pytest.raises(CommandError, match="old"):
        call_command("worker_heartbeat", "--max-age", "-1")


def test_provisioning_and_metering_families(client, scenario):
    """Given the scenario's approvals (three queued apply jobs, one of which is made to fail after 3 attempts) and
    a metered cluster whose pods were read 2 minutes ago holding one 2-hour whole-GPU pod, the scrape shows
    jobs, attempts and failures, the ingestion lag and the GPU-equivalent-seconds by team and strategy."""
    from chargeback.services import usage_ingest
    from provisioning.models import Cluster, ProvisioningJob
    from tests.chargeback.conftest import pod_for

    ProvisioningJob.objects.filter(request=scenario["gang"]).update(status="failed", attempts=3)
    Cluster.objects.filter(name="gpu-east").update(api_server="https://gpu-east.example:6443", applier="kubernetes")
    now = timezone.now()
    pod = pod_for(scenario["gang"], started_at=now - timedelta(hours=2, minutes=2), devices=8,
                  finished_at=now - timedelta(minutes=2))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=now - timedelta(minutes=2))

    samples = scrape(client)

    assert value(samples, "gpu_portal_provisioning_jobs", kind="apply", status="queued") == 2
    assert value(samples, "gpu_portal_provisioning_jobs", kind="apply", status="failed") == 1
    assert value(samples, "gpu_portal_provisioning_attempts_total", kind="apply") == 3
    assert value(samples, "gpu_portal_provisioning_failures_total", kind="apply") == 1
    assert 110 < value(samples, "gpu_portal_usage_ingestion_lag_seconds", cluster="gpu-east") < 200
    seconds = value(samples, "gpu_portal_gpu_equivalent_seconds_total", team="team-a", strategy="whole_gpu",
                    category="usage")
    assert seconds == pytest.approx(16.0 * 3600)  # 8 GPUs for 2 hours, in base units
    for name in ("provisioning.jobs", "chargeback.ingestion_lag", "chargeback.equivalent_seconds"):
        assert value(samples, "gpu_portal_collector_up", collector=name) == 1

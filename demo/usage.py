"""Demo usage: a realistic stretch of GPU time (the previous calendar month up to now) for the demo teams,
made of synthetic pod records fed through the real ingestion path (`usage_ingest`) and marked `is_demo`, plus
demo rate cards, so that a new user opens a populated chargeback report. Idempotent: the schedule is fixed in
time (every pod's UID and times derive from its request and its slot since a fixed epoch), so loading again,
even weeks later, only adds what happened since and closes what finished.

The story it tells: nlp serves its chat model on 1g MIG slices of an H200 (1/7 of a GPU each), vision serves a
similar model on a whole H100, and its bill is several times nlp's for what looks like the same workload.
"""
from __future__ import annotations

import random
import uuid
from collections import defaultdict
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction

from django.conf import settings
from django.db.models import Min
from django.utils import timezone as dj_timezone

from intake.choices import RequestStatus
from intake.models import GpuRequest
from portal.errors import DomainError
from portal.models import Team
from provisioning.manifests.names import request_base_name, team_namespace
from provisioning.models import AppliedObject, Cluster
from workflows.services import request_approve, request_submit

from chargeback.models import RateCard, UsageInterval
from chargeback.periods import add_months, day_start, month_start
from chargeback.services import rate_card_create, usage_ingest
from chargeback.synthetic import synthetic_pod

DEMO_TEAMS = ("vision", "nlp", "recsys")
EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)  # a Monday: slots count from here
DEMO_NAMESPACE = uuid.UUID("6f1c1c1e-8a55-4c3e-9d0e-3b9f1de0a001")

# Requests the usage story needs besides the portal's demo requests: (team, name, requester, answers).
DEMO_REQUESTS = [
    ("vision", "detector-finetune", "alice", {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
     "gpu_memory_gb": 60, "gpus_per_replica": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3", "expected_hours": 14}),
    ("vision", "clip-serving", "carol", {"workload_class": "inference", "tenancy": "dedicated",
     "latency": "latency_sensitive", "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}),
]

# Per request name: how its pods come and go. kind: "service" (replicas always on, replaced every `period`
# hours), "sessions" (weekday sessions from 9:00, `hours` long give or take), "jobs" (one every `period` hours).
SCHEDULES = {
    "chat-serving": {"kind": "service", "replicas": 2, "period": 7 * 24},
    "clip-serving": {"kind": "service", "replicas": 1, "period": 7 * 24},
    "tokenizer-notebook": {"kind": "sessions", "hours": 7},
    "patient-embeddings": {"kind": "sessions", "hours": 3},
    "detector-finetune": {"kind": "jobs", "period": 60, "hours": 14},
}

# Demo prices per GPU-equivalent-hour (EUR); the H200 MIG price drops mid-month to show the rate split.
RATES = [
    ("H100-80GB", "whole_gpu", "2.90", 0), ("B200-180GB", "whole_gpu", "5.50", 0), ("H200-141GB", "mig", "3.80", 0),
    ("H200-141GB", "mig", "3.40", 15), ("A100-80GB", "mig", "1.90", 0), ("L40S-48GB", "time_slicing", "1.20", 0),
    ("H200-141GB", "whole_gpu", "3.60", 0), ("A100-80GB", "whole_gpu", "2.10", 0),
]


def _rng(name: str, slot: int) -> random.Random:
    return random.Random(f"{name}/{slot}")


def pod_windows(name: str, *, start: datetime, now: datetime) -> list[tuple[int, datetime, datetime | None]]:
    """(slot, started, finished or None if still running at `now`) of a request's pods that overlap
    [start, now), from the request's schedule. Deterministic: a slot's times never depend on start or now."""
    spec = SCHEDULES[name]
    windows = []
    if spec["kind"] == "service":
        period = timedelta(hours=spec["period"])
        first = int((start - EPOCH) / period) - 1
        slot = first
        while True:
            begin = EPOCH + slot * period + timedelta(minutes=_rng(name, slot).randint(0, 50))
            if begin >= now:
                break
            end = EPOCH + (slot + 1) * period + timedelta(minutes=_rng(name, slot + 1).randint(0, 50) + 2)
            for replica in range(spec["replicas"]):
                windows.append((slot * 10 + replica, begin + timedelta(seconds=7 * replica), end))
            slot += 1
    elif spec["kind"] == "sessions":
        day = start.date()
        while day_start(day) < now:
            slot = (day - EPOCH.date()).days
            rng = _rng(name, slot)
            if day.weekday() < 5 and rng.random() < 0.85:
                begin = day_start(day) + timedelta(hours=9, minutes=rng.randint(0, 59), seconds=rng.randint(0, 59))
                end = begin + timedelta(hours=spec["hours"], minutes=rng.randint(-50, 90), seconds=rng.randint(0, 59))
                windows.append((slot, begin, end))
            day += timedelta(days=1)
    else:  # jobs
        period = timedelta(hours=spec["period"])
        slot = int((start - EPOCH) / period)
        while True:
            rng = _rng(name, slot)
            begin = EPOCH + slot * period + timedelta(hours=rng.randint(0, 8), minutes=rng.randint(0, 59))
            if begin >= now:
                break
            end = begin + timedelta(hours=spec["hours"] + rng.randint(-4, 4), minutes=rng.randint(0, 59),
                                    seconds=rng.randint(0, 59))
            windows.append((slot, begin, end))
            slot += 1
    return [(slot, begin, None if end > now else end) for slot, begin, end in windows
            if (end is None or end > start) and begin < now]


def _equivalents_text(value: Fraction) -> str:
    """As the renderer writes it: an exact decimal, six places at most."""
    return format(Decimal(value.numerator) / Decimal(value.denominator), ".6f").rstrip("0").rstrip(".")


def demo_owner(gpu_request: GpuRequest) -> tuple[str, str, str, str] | None:
    """The Deployment the demo's pods belong to, recorded as applied by the portal with a demo UID (the demo
    clusters have no API server to answer an apply), so its pods are billed as the request (docs/chargeback.md).
    None when the request's cluster is not declared: its pods are then found in the cluster."""
    cluster = Cluster.objects.filter(name=gpu_request.decision.cluster).first()
    if cluster is None:
        return None
    name = f"demo-{request_base_name(gpu_request.name, gpu_request.pk)}"
    uid = str(uuid.uuid5(DEMO_NAMESPACE, f"owner of {gpu_request.pk}"))
    AppliedObject.objects.update_or_create(
        cluster=cluster, api_version="apps/v1", kind="Deployment", namespace=team_namespace(gpu_request.team.slug),
        name=name, defaults={"request": gpu_request, "uid": uid, "resource_version": "demo",
                             "applied_at": dj_timezone.now()})
    return "apps/v1", "Deployment", name, uid


def demo_pods(gpu_request: GpuRequest, *, start: datetime, now: datetime) -> list[dict]:
    decision = gpu_request.decision
    domain = settings.PORTAL_LABEL_DOMAIN
    owner = demo_owner(gpu_request)
    per_pod = Fraction(str(decision.gpu_equivalents_per_replica)).limit_denominator(64)
    pods = []
    for slot, begin, end in pod_windows(gpu_request.name, start=start, now=now):
        uid = str(uuid.uuid5(DEMO_NAMESPACE, f"{gpu_request.pk}/{slot}"))
        restarted = begin + timedelta(minutes=3) if slot % 11 == 5 and (end is None or end > begin + timedelta(minutes=4)) else None
        pods.append(synthetic_pod(
            uid=uid, name=f"{gpu_request.name}-{uid[:5]}", namespace=team_namespace(gpu_request.team.slug),
            owner=owner, label_domain=domain, request_id=gpu_request.pk, team=gpu_request.team.slug, cluster=decision.cluster,
            strategy=decision.strategy, gpu_model=decision.gpu_model, mig_profile=decision.mig_profile or "",
            devices=decision.gpus_per_replica, equivalents=_equivalents_text(per_pod), started_at=begin,
            finished_at=end, workload_class=gpu_request.workload_class, restarted_at=restarted,
            node=f"{decision.node_pool}-{slot % 4}",
        ))
    return pods


def _demo_requests(users: dict) -> list[GpuRequest]:
    platform = users["pat"]
    for team_slug, name, requester, answers in DEMO_REQUESTS:
        team = Team.objects.get(slug=team_slug)
        if GpuRequest.objects.filter(team=team, name=name).exists():
            continue
        gpu_request = request_submit(user=users[requester], team=team, name=name, raw_answers=answers)
        if gpu_request.status == RequestStatus.PENDING_APPROVAL:
            request_approve(user=platform, request_id=gpu_request.pk, comment="Demo: approved.")
    idle = [RequestStatus.PENDING_APPROVAL, RequestStatus.REJECTED, RequestStatus.CANCELLED]
    return list(GpuRequest.objects.filter(name__in=SCHEDULES, team__slug__in=DEMO_TEAMS).exclude(status__in=idle)
                .select_related("team").order_by("pk"))


def _demo_rate_cards(user, *, first_day: date) -> None:
    for gpu_model, strategy, price, day in RATES:
        valid_from = first_day + timedelta(days=day)
        if RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy).exists() and not day:
            continue  # the platform team's own cards stand
        if RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy, valid_from=valid_from).exists():
            continue
        try:
            rate_card_create(user=user, gpu_model=gpu_model, strategy=strategy, price_per_equivalent_hour=Decimal(price),
                             currency="EUR", valid_from=valid_from, note="demo rate")
        except DomainError:
            continue  # that month is closed by now: its rates stay as they were


def load_demo_usage(*, users: dict, now: datetime | None = None) -> dict[str, int]:
    """Demo requests, rate cards and the previous calendar month of usage up to now; returns intervals written
    per cluster."""
    now = now or dj_timezone.now()
    first_day = add_months(month_start(now.date()), -1)
    _demo_rate_cards(users["pat"], first_day=first_day)
    # Reach back to demo pods still open from an earlier load, so they get their finish too.
    oldest_open = UsageInterval.objects.filter(is_demo=True, ended_at__isnull=True).aggregate(s=Min("started_at"))["s"]
    start = min(day_start(first_day), oldest_open or day_start(first_day))
    by_cluster: dict[str, list[dict]] = defaultdict(list)
    for gpu_request in _demo_requests(users):
        by_cluster[gpu_request.decision.cluster].extend(demo_pods(gpu_request, start=start, now=now))
    written = {}
    for cluster, pods in sorted(by_cluster.items()):
        result = usage_ingest(cluster_name=cluster, pods=pods, now=now, complete=False, source="demo", is_demo=True)
        written[cluster] = result.rows_written
    return written

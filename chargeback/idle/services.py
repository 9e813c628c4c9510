"""Idle GPUs: one scan of one cluster (read utilisation from its Prometheus, record it, flag, notify, book idle
time, release). The notices are portal notices (portal.notices); rules are in chargeback.idle.rules, queries in
.dcgm."""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from intake import events
from intake.choices import RequestStatus
from intake.models import GpuRequest
from intake.services import request_transition
from portal.notices import notice_queue
from provisioning.models import Cluster
from provisioning.reconcile.rules import duration_words
from provisioning.services import allocation_on_cancelled

from ..choices import Category
from ..models import UsageInterval
from ..services import usage_mark_waste
from . import dcgm, prometheus, rules
from .models import GpuUtilisation, IdleAllocation, IdleEnd, IdlePolicy, IdleScan

logger = logging.getLogger(__name__)


def idle_rules() -> dict[str, rules.IdleRule]:
    """Each workload class's rule: its IdlePolicy row, else the default (one query)."""
    found = dict(rules.IDLE_DEFAULTS)
    for policy in IdlePolicy.objects.all():
        release = policy.release_after_seconds
        found[policy.workload_class] = rules.IdleRule(
            threshold_percent=policy.threshold_percent, idle_after=timedelta(seconds=policy.idle_after_seconds),
            release_after=None if release is None else timedelta(seconds=release),
        )  # fmt: skip
    return found


@dataclass
class _Observed:
    peak: dict[float, float] = field(default_factory=dict)  # step -> busiest device of any of its pods
    mean: dict[float, list[float]] = field(default_factory=lambda: defaultdict(list))
    memory_used: int = 0
    memory_total: int = 0


def _observe(cluster: Cluster, pods: dict[tuple[str, str], int], *, now: datetime, lookback: timedelta,
             step: timedelta) -> dict[int, _Observed]:
    """Per request: what Prometheus holds for its pods over [now - lookback, now]."""
    selector = dcgm.pod_selector(sorted({ns for ns, _ in pods}), sorted({pod for _, pod in pods}))
    step_s = int(step.total_seconds())
    queries = dcgm.utilisation_queries(selector, step_s)
    start = now - lookback
    observed: dict[int, _Observed] = defaultdict(_Observed)

    def request_of(series):
        return pods.get((series.labels.get(dcgm.NAMESPACE_LABEL, ""), series.labels.get(dcgm.POD_LABEL, "")))

    for name in ("peak", "mean", "memory_used"):
        for series in prometheus.query_range(cluster.prometheus_url, queries[name], start=start, end=now,
                                             step_seconds=step_s):
            request_id = request_of(series)
            if request_id is None:
                continue
            seen = observed[request_id]
            for at, value in series.points:
                if name == "peak":
                    seen.peak[at] = max(seen.peak.get(at, 0.0), value)
                elif name == "mean":
                    seen.mean[at].append(value)
                else:
                    seen.memory_used = max(seen.memory_used, int(value))
    for series in prometheus.query(cluster.prometheus_url, queries["memory_total"], at=now):
        request_id = request_of(series)
        if request_id is not None and series.points:
            observed[request_id].memory_total = max(observed[request_id].memory_total, int(series.points[0][1]))
    return observed


def _lookback(found_rules: dict[str, rules.IdleRule]) -> tuple[timedelta, timedelta]:
    """How far back to read (the longest idle_after, at least PORTAL_IDLE_LOOKBACK_SECONDS) and the step (about
    240 steps, at least two scrape intervals of a 1 s scrape)."""
    longest = max(r.idle_after for r in found_rules.values())
    lookback = max(longest + timedelta(seconds=1), timedelta(seconds=settings.PORTAL_IDLE_LOOKBACK_SECONDS))
    step = timedelta(seconds=max(2, int(lookback.total_seconds()) // 240))
    return lookback, step


def idle_scan(*, cluster_name: str, now: datetime | None = None) -> IdleScan:
    """Scan one cluster: read its running requests' pods from Prometheus, record what they used, and flag, notify,
    book and release idle ones. A cluster without prometheus_url is skipped (recorded)."""
    now = now or timezone.now()
    cluster = Cluster.objects.get(name=cluster_name)
    scan = IdleScan(cluster=cluster_name, scanned_at=now)
    if not cluster.prometheus_url:
        scan.status, scan.message = IdleScan.Status.SKIPPED, "No prometheus_url: idle GPUs are not looked for."
        scan.save()
        return scan
    pods = dict(((ns, pod), request_id) for ns, pod, request_id in UsageInterval.objects.filter(
        cluster=cluster_name, ended_at__isnull=True, request__status=RequestStatus.RUNNING,
    ).values_list("namespace", "pod_name", "request_id"))  # fmt: skip
    found_rules = idle_rules()
    lookback, step = _lookback(found_rules)
    try:
        observed = _observe(cluster, pods, now=now, lookback=lookback, step=step) if pods else {}
    except prometheus.PrometheusError as exc:
        scan.status, scan.message = IdleScan.Status.FAILED, str(exc)
        scan.save()
        if exc.transient:
            raise
        return scan
    requests = GpuRequest.objects.select_related("team", "requested_by").in_bulk(list(observed))
    for request_id, seen in sorted(observed.items()):
        if not seen.peak:
            continue
        gpu_request = requests[request_id]
        rule = found_rules.get(gpu_request.workload_class, rules.IDLE_DEFAULTS["training"])
        flagged, released = _assess(gpu_request, seen, cluster=cluster_name, rule=rule, now=now,
                                    window_start=now - lookback, step=step)
        scan.requests_read += 1
        scan.flagged += flagged
        scan.released += released
    _end_gone(cluster_name, now=now)
    scan.status = IdleScan.Status.OK
    scan.message = f"{len(pods)} pods of running requests; {scan.requests_read} with GPU metrics."
    scan.save()
    return scan


def idle_scan_all(*, now: datetime | None = None) -> list[IdleScan]:
    """Scan every enabled cluster with a prometheus_url; one failing Prometheus does not stop the others."""
    scans = []
    for name in Cluster.objects.filter(enabled=True).exclude(prometheus_url="").order_by("name").values_list(
            "name", flat=True):
        try:
            scans.append(idle_scan(cluster_name=name, now=now))
        except prometheus.PrometheusError as exc:  # recorded on its row; the next beat reads again
            logger.warning("idle scan of %s failed: %s", name, exc)
    return scans


@transaction.atomic
def _assess(gpu_request: GpuRequest, seen: _Observed, *, cluster: str, rule: rules.IdleRule, now: datetime,
            window_start: datetime, step: timedelta) -> tuple[int, int]:
    peak_points = sorted(seen.peak.items())
    since = rules.idle_since(peak_points, threshold=rule.threshold_percent, step=step)
    if since is not None:
        since = max(since, window_start)
    means = [sum(v) / len(v) for _, v in sorted(seen.mean.items())]
    peak = max(v for _, v in peak_points)
    GpuUtilisation.objects.update_or_create(request=gpu_request, defaults={
        "cluster": cluster, "window_start": window_start, "window_end": now, "samples": len(peak_points),
        "peak_utilisation_percent": rules.percent(peak), "median_utilisation_percent": rules.median(means),
        "peak_memory_used_mib": seen.memory_used, "memory_total_mib": seen.memory_total, "idle_since": since,
    })  # fmt: skip
    open_episode = (IdleAllocation.objects.select_for_update(no_key=True)
                    .filter(request=gpu_request, ended_at__isnull=True).first())
    # Busy again: no idle run now, or one that began after the last booking (and not merely at the window's edge).
    busy_since_booked = open_episode is not None and (since is None or (
        since > window_start + step and since > (open_episode.marked_until or open_episode.detected_at)))
    if busy_since_booked:
        # Idle time is booked only up to the last scan that saw it idle: nothing after it is counted.
        open_episode.ended_at, open_episode.end_reason = now, IdleEnd.ACTIVE
        open_episode.save(update_fields=["ended_at", "end_reason", "updated_at"])
        events.event_note(request=gpu_request, kind="cluster", reason="IdleEnded",
                          comment="Its GPUs are busy again; the idle time up to the previous scan is booked as idle.")
        return 0, 0
    if not rules.is_idle(since, now=now, rule=rule):
        return 0, 0
    flagged = 0
    if open_episode is None:
        open_episode = IdleAllocation.objects.create(
            request=gpu_request, cluster=cluster, workload_class=gpu_request.workload_class, idle_since=since,
            detected_at=now, threshold_percent=rule.threshold_percent,
            peak_utilisation_percent=rules.percent(max(v for t, v in peak_points if rules.at_utc(t) > since)),
        )  # fmt: skip
        flagged = 1
        events.event_note(request=gpu_request, kind="cluster", reason="IdleFlagged", comment=_flag_words(
            open_episode, rule))
        idle_notify(allocation=open_episode, rule=rule, now=now)
    _book_idle(open_episode, now=now)
    if open_episode.released_at is None and rules.should_release(detected_at=open_episode.detected_at, now=now,
                                                                  rule=rule):
        _release(open_episode, rule=rule, now=now)
        return flagged, 1
    return flagged, 0


def _minutes(delta: timedelta) -> str:
    return duration_words(delta)


def _flag_words(episode: IdleAllocation, rule: rules.IdleRule) -> str:
    release = (f" The policy for {episode.workload_class} releases it if it is still idle "
               f"{_minutes(rule.release_after)} after this notice." if rule.release_after is not None
               else f" The policy for {episode.workload_class} never releases it; it is only reported.")
    return (f"Idle since {episode.idle_since:%Y-%m-%d %H:%M:%S} UTC: the busiest GPU stayed below "
            f"{episode.threshold_percent.normalize():f}% for {_minutes(episode.detected_at - episode.idle_since)} "
            f"(the policy flags {_minutes(rule.idle_after)}); its GPU time is booked as idle (paid for, unused)."
            + release)


def _book_idle(episode: IdleAllocation, *, now: datetime) -> None:
    """Book the episode's GPU time since the last booking as `idle` in chargeback (splitting the intervals)."""
    start = episode.marked_until or episode.idle_since
    if now <= start:
        return
    usage_mark_waste(request_id=episode.request_id, started_at=start, ended_at=now, now=now,
                     reason=f"idle GPUs, episode #{episode.pk}", category=Category.IDLE)
    episode.marked_until = now
    episode.save(update_fields=["marked_until", "updated_at"])


def _release(episode: IdleAllocation, *, rule: rules.IdleRule, now: datetime) -> None:
    """Through the state machine, then the teardown job (queued in this transaction, sent after commit)."""
    gpu_request = request_transition(
        request_id=episode.request_id, to_status=RequestStatus.CANCELLED, actor=None, reason="IdleReleased",
        comment=f"Released by the portal: its GPUs were idle (below {episode.threshold_percent.normalize():f}%) "
                f"since {episode.idle_since:%Y-%m-%d %H:%M:%S} UTC and still were {_minutes(rule.release_after)} "
                f"after the owner was told; the {episode.workload_class} policy releases idle GPUs.",
    )  # fmt: skip
    allocation_on_cancelled(gpu_request=gpu_request)
    episode.released_at = episode.ended_at = now
    episode.end_reason = IdleEnd.RELEASED
    episode.save(update_fields=["released_at", "ended_at", "end_reason", "updated_at"])


def _end_gone(cluster_name: str, *, now: datetime) -> None:
    """Close the open episodes of requests that stopped running (completed, cancelled by someone)."""
    IdleAllocation.objects.filter(cluster=cluster_name, ended_at__isnull=True).exclude(
        request__status=RequestStatus.RUNNING).update(ended_at=now, end_reason=IdleEnd.GONE, updated_at=now)


# --- notices ----------------------------------------------------------------------------------------------------


def _request_url(gpu_request: GpuRequest) -> str:
    return f"{settings.PORTAL_BASE_URL or 'http://127.0.0.1:8000'}/requests/{gpu_request.pk}/"


def idle_notify(*, allocation: IdleAllocation, rule: rules.IdleRule, now: datetime) -> list[int]:
    """Queue the notices of one idle episode (to the owner's and the team's e-mail, and the team webhook) as
    portal notices keyed "idle:<episode id>", once each; delivery is dispatched after commit, and a notice whose
    dispatch a broker outage lost is sent by the notices' redispatch sweep."""
    gpu_request = allocation.request
    team = gpu_request.team
    text = _flag_words(allocation, rule)
    payload = {
        "event": "gpu.idle",
        "text": text,
        "request": {"id": gpu_request.pk, "name": gpu_request.name, "team": team.slug,
                    "workload_class": gpu_request.workload_class, "url": _request_url(gpu_request)},
        "cluster": allocation.cluster,
        "idle": {"since": allocation.idle_since.isoformat(), "detected_at": allocation.detected_at.isoformat(),
                 "threshold_percent": f"{allocation.threshold_percent:f}",
                 "peak_utilisation_percent": f"{allocation.peak_utilisation_percent:f}",
                 "released_after_seconds": None if rule.release_after is None
                 else int(rule.release_after.total_seconds())},
        "at": now.isoformat(),
    }  # fmt: skip
    recipients = list(dict.fromkeys(a for a in [getattr(gpu_request.requested_by, "email", ""),
                                                team.notification_email] if a))
    body = render_to_string("chargeback/email/gpu_idle.txt", {
        "gpu_request": gpu_request, "team": team, "text": text, "url": _request_url(gpu_request)})
    subject = f"[GPU portal] {team.slug}/{gpu_request.name} (request #{gpu_request.pk}): GPUs idle"
    created = notice_queue(key=idle_notice_key(allocation.pk), team=team, subject=subject, body=body,
                           payload=payload, recipients=recipients)
    allocation.notified_at = now
    allocation.save(update_fields=["notified_at", "updated_at"])
    if not recipients and not team.webhook_url:
        events.event_note(request=gpu_request, reason="NobodyToNotify",
                          comment="Nobody could be told its GPUs are idle: no e-mail address and no team webhook.")
    return created


def idle_notice_key(allocation_id: int) -> str:
    """The key of an idle episode's notices (portal.models.Notice)."""
    return f"idle:{allocation_id}"

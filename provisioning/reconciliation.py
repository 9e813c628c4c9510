"""Status reconciliation, the database and cluster side: apply what `provisioning.reconcile` derives from the pods,
track stalled gangs and the GPU time they burn, notify, release; and the per-cluster list/watch loop.

- `status_reconcile(cluster=, pods=, now=)` is one cycle: a fixed number of queries whatever the number of pods
  (load the active requests, the policies, the open stalls and the known event keys; insert the new events in
  one statement). Plain status changes go through `intake.services.request_transition_many` (a few statements
  per batch of requests); a change that also opens or closes a stall, or tears objects down, goes through
  `request_transition` with its stall bookkeeping, a few statements per request.
- `cluster_status_reconcile(cluster_id=, watch_seconds=)` is one run of the loop for a cluster (Celery beat):
  LIST the portal's pods (first run, fallback) or resume the watch from where the last run stopped, reconcile,
  then WATCH for a bounded time, reconciling the requests whose pods changed. A Redis lock per cluster keeps two
  workers from reconciling the same cluster at once.
- `gang_notification_deliver(notification_id=)` sends one stalled-gang notice (e-mail or webhook) once.
"""
from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from intake import events
from intake.choices import RequestStatus, WorkloadClass
from intake.models import GpuRequest
from intake.services import TransitionChange, request_transition, request_transition_many
from portal.errors import Conflict
from portal.dispatch import send_now
from portal.models import Team
from portal.webhooks import WebhookFailed, webhook_post, webhook_request

from .choices import (
    JobKind,
    NotificationChannel,
    NotificationKind,
    NotificationStatus,
    ReconcileStatus,
    StallEnd,
)
from .kube.client import KubeClient
from .kube.connection import cluster_connection
from .kube.errors import KubeError
from .kube.reads import list_pods_snapshot, watch_pods
from .manifests.labels import MANAGED_BY, MANAGED_BY_KEY
from .models import Cluster, ClusterReconcileState, GangNotification, GangPolicy, GangStall, ProvisioningJob
from .reconcile import (
    RECONCILED_STATUSES,
    Assessment,
    GangState,
    RequestContext,
    Thresholds,
    assess,
    duration_words,
    equivalents_words,
    facts_by_request,
    request_id_of,
)

logger = logging.getLogger(__name__)

POD_SELECTOR = f"{MANAGED_BY_KEY}={MANAGED_BY}"
# During a watch, the requests whose pods changed are reconciled at most this often (events come in bursts).
WATCH_FLUSH_SECONDS = 2.0
# A resumed watch first replays what happened since the last run; it is given this long (the API's unit) to do so.
CATCH_UP_SECONDS = 1
# Requests whose status or stall changes are written this many per transaction.
WRITE_BATCH = 100


def decimal_words(value: Decimal) -> str:
    """12.500000 -> "12.5", 10.000000 -> "10" (never "1E+1")."""
    return f"{value.normalize():f}" if value else "0"


# --- thresholds -------------------------------------------------------------------------------------------------


def gang_thresholds() -> dict[str, Thresholds]:
    """The thresholds of each workload class: its GangPolicy row (one query) and the settings."""
    policies = {p.workload_class: p for p in GangPolicy.objects.all()}
    image_pull = timedelta(seconds=settings.PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS)
    no_pods = settings.PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS
    thresholds = {}
    for workload_class in WorkloadClass.values:
        policy = policies.get(workload_class)
        release = policy.release_after_seconds if policy else None
        stall = policy.stall_after_seconds if policy else settings.PORTAL_GANG_STALL_AFTER_SECONDS
        thresholds[workload_class] = Thresholds(
            stall_after=timedelta(seconds=stall),
            release_after=timedelta(seconds=release) if release else None,
            image_pull_fail_after=image_pull,
            no_pods_fail_after=timedelta(seconds=no_pods) if no_pods else None,
        )
    return thresholds


def _context(gpu_request: GpuRequest, stall: GangStall | None) -> RequestContext:
    decision = gpu_request.decision or {}
    gang = decision.get("gang") or None
    return RequestContext(
        request_id=gpu_request.pk,
        status=gpu_request.status,
        workload_class=gpu_request.workload_class,
        replicas=int(decision.get("replicas") or 1),
        gang_min_members=int(gang["min_members"]) if gang else None,
        status_changed_at=gpu_request.status_changed_at,
        pods_missing_since=gpu_request.pods_missing_since,
        stalled_since=stall.detected_at if stall else None,
    )


# --- one cycle --------------------------------------------------------------------------------------------------


@dataclass
class CycleOutcome:
    pods: int = 0
    requests: int = 0
    events: int = 0
    transitions: list[tuple[int, str, str]] = field(default_factory=list)  # (request id, from, to)
    stalls_opened: int = 0
    stalls_closed: int = 0
    ignored_pods: int = 0  # pods of requests that are not being reconciled here (finished, cancelled, unknown)


def _active_requests(cluster: Cluster, request_ids: Iterable[int] | None) -> list[GpuRequest]:
    """The requests applied to this cluster whose status pods decide (one query)."""
    queryset = GpuRequest.objects.filter(
        status__in=sorted(RECONCILED_STATUSES),
        pk__in=ProvisioningJob.objects.filter(cluster=cluster, kind=JobKind.APPLY).values("request_id"),
    ).select_related("team").only(
        "id", "name", "status", "workload_class", "decision", "status_changed_at", "pods_missing_since",
        "team__slug", "team__notification_email", "team__webhook_url",
    )  # fmt: skip
    if request_ids is not None:
        queryset = queryset.filter(pk__in=list(request_ids))
    return list(queryset.order_by("pk"))


def status_reconcile(*, cluster: Cluster, pods: Iterable[Mapping[str, Any]], now: datetime,
                     request_ids: Iterable[int] | None = None) -> CycleOutcome:
    """Apply one observation of the cluster's pods to the requests on it.

    `pods` are all the portal's pods on the cluster, or, with `request_ids`, all the pods of those requests (a
    request absent from `pods` has none). The number of queries does not depend on the number of pods, nor on
    the number of requests when nothing changes."""
    pods = list(pods)
    facts = facts_by_request(pods, label_domain=settings.PORTAL_LABEL_DOMAIN)
    requests = _active_requests(cluster, request_ids)
    thresholds = gang_thresholds()
    open_stalls = GangStall.objects.filter(cluster=cluster, ended_at__isnull=True)
    if request_ids is not None:
        open_stalls = open_stalls.filter(request_id__in=list(request_ids))
    stalls = {}
    for stall in open_stalls:
        stall.cluster = cluster  # spares a query per stall when a notice names the cluster
        stalls[stall.request_id] = stall

    assessments: dict[int, Assessment] = {}
    for gpu_request in requests:
        stall = stalls.get(gpu_request.pk)
        assessments[gpu_request.pk] = assess(
            facts.get(gpu_request.pk, ()), _context(gpu_request, stall), thresholds[gpu_request.workload_class], now
        )
    outcome = CycleOutcome(pods=len(pods), requests=len(requests))
    outcome.ignored_pods = sum(len(f) for rid, f in facts.items() if rid not in assessments)
    outcome.events = events.events_cluster_record(
        items=((e.request_id, e.key, e.reason, e.text) for a in assessments.values() for e in a.events)
    )
    _pods_missing_update(requests, assessments)

    writes = [(r, assessments[r.pk], stalls.pop(r.pk, None)) for r in requests]
    writes = [(r, a, stall) for r, a, stall in writes if _needs_write(a, stall)]
    # A plain status change (no stall to open or close, nothing to tear down) goes through the batch form of the
    # one transition service: a few statements for the whole batch, not five per request.
    simple = [(r, a) for r, a, stall in writes if stall is None and _plain_transition(a)]
    writes = [(r, a, stall) for r, a, stall in writes if not (stall is None and _plain_transition(a))]
    for start in range(0, len(simple), WRITE_BATCH):
        batch = simple[start:start + WRITE_BATCH]
        changed, refused = request_transition_many(changes=[
            TransitionChange(request_id=r.pk, to_status=a.target, comment=a.comment, reason=a.reason)
            for r, a in batch
        ])
        for pk, why in refused.items():  # cancelled (or otherwise moved on) since we loaded it: nothing to do
            logger.info("request %s changed while reconciling: %s", pk, why)
        done = set(changed)
        outcome.transitions.extend((r.pk, a.current, a.target) for r, a in batch if r.pk in done)
    # Requests that change are written in batches, one transaction (one commit) per batch, so row locks are held
    # briefly. A request cancelled meanwhile skips only itself: `request_transition` (the first write of `_apply`)
    # runs in its own savepoint and raises Conflict before anything else is written for that request.
    for start in range(0, len(writes), WRITE_BATCH):
        with transaction.atomic():
            for gpu_request, assessment, stall in writes[start:start + WRITE_BATCH]:
                try:
                    opened, closed = _apply(gpu_request, assessment, stall, cluster=cluster, now=now,
                                            release_after=thresholds[gpu_request.workload_class].release_after)
                except Conflict as exc:  # cancelled (or otherwise moved on) since we loaded it: nothing to do
                    logger.info("request %s changed while reconciling: %s", gpu_request.pk, exc)
                    continue
                if assessment.changed:
                    outcome.transitions.append((gpu_request.pk, assessment.current, assessment.target))
                outcome.stalls_opened += opened
                outcome.stalls_closed += closed
    # Open stalls left over belong to requests no longer reconciled here (cancelled, or finished elsewhere).
    if request_ids is None and stalls:
        outcome.stalls_closed += _close_orphan_stalls(list(stalls.values()), now=now)
    return outcome


def _pods_missing_update(requests: list[GpuRequest], assessments: dict[int, Assessment]) -> None:
    """Remember since when a request has had no pod (at most two queries, and only when that changes)."""
    missing: dict[datetime, list[int]] = {}
    back: list[int] = []
    for gpu_request in requests:
        since = assessments[gpu_request.pk].pods_missing_since
        if since is not None and gpu_request.pods_missing_since is None:
            missing.setdefault(since, []).append(gpu_request.pk)
        elif since is None and gpu_request.pods_missing_since is not None:
            back.append(gpu_request.pk)
    if back:
        GpuRequest.objects.filter(pk__in=back).update(pods_missing_since=None)
    if len(missing) == 1:
        [(since, pks)] = missing.items()
        GpuRequest.objects.filter(pk__in=pks).update(pods_missing_since=since)
    elif missing:  # one statement for all, each row with its own time
        from django.db.models import Case, Value, When

        ids = [pk for pks in missing.values() for pk in pks]
        GpuRequest.objects.filter(pk__in=ids).update(pods_missing_since=Case(
            *(When(pk__in=pks, then=Value(since)) for since, pks in missing.items())))


def _plain_transition(assessment: Assessment) -> bool:
    return assessment.changed and assessment.target != RequestStatus.STALLED and not assessment.teardown


def _needs_write(assessment: Assessment, stall: GangStall | None) -> bool:
    if assessment.changed:
        return True
    if stall is None:
        return assessment.target == RequestStatus.STALLED  # stalled without a record: open one
    if assessment.target != RequestStatus.STALLED:
        return True  # a stall record left open: close it
    gang = assessment.gang
    return gang is not None and _segment_changed(stall, gang)


def _segment_changed(stall: GangStall, gang: GangState) -> bool:
    return (stall.running_pods, stall.pending_pods, stall.gpu_equivalents_running) != (
        gang.running_pods, gang.pending_pods, gang.gpu_equivalents_running
    )


def _pending_detail(gang: GangState) -> list[dict]:
    return [{"pod": p.name, "since": p.since.isoformat() if p.since else None, "reason": p.reason, "text": p.words}
            for p in gang.pending[:20]]  # fmt: skip


def _apply(gpu_request: GpuRequest, assessment: Assessment, stall: GangStall | None, *, cluster: Cluster,
           now: datetime, release_after: timedelta | None = None) -> tuple[int, int]:
    """One request's status change and stall bookkeeping, in the caller's transaction. The transition comes first:
    when it raises Conflict nothing has been written. Returns (stalls opened, stalls closed)."""
    opened = closed = 0
    gang = assessment.gang
    if assessment.changed:
        request_transition(request_id=gpu_request.pk, to_status=assessment.target, actor=None,
                           comment=assessment.comment, reason=assessment.reason)
    if assessment.target == RequestStatus.STALLED and gang is not None:
        if stall is None:
            stall = GangStall.objects.create(
                request=gpu_request, cluster=cluster, workload_class=gpu_request.workload_class,
                started_at=gang.partial_since or now, detected_at=now, segment_started_at=gang.partial_since or now,
                running_pods=gang.running_pods, pending_pods=gang.pending_pods,
                gpu_equivalents_running=gang.gpu_equivalents_running, pending_detail=_pending_detail(gang),
            )  # fmt: skip
            opened = 1
            if not assessment.changed:
                events.event_note(request=gpu_request, kind="cluster", reason="GangStalled", comment=assessment.comment)
            gang_notify(stall=stall, gpu_request=gpu_request, kind=NotificationKind.STALLED,
                        text=assessment.comment, now=now, release_after=release_after)
        elif _segment_changed(stall, gang):
            # The running pods changed: price the stretch so far with what ran during it, start a new one.
            stall.burnt_before_segment = stall.burnt_gpu_seconds(now)
            stall.segment_started_at = now
            stall.running_pods, stall.pending_pods = gang.running_pods, gang.pending_pods
            stall.gpu_equivalents_running = gang.gpu_equivalents_running
            stall.pending_detail = _pending_detail(gang)
            stall.save()
    elif stall is not None:
        released = assessment.reason == "GangReleased"
        stall.ended_at = now
        stall.end_reason = {
            RequestStatus.RUNNING: StallEnd.RECOVERED,
            RequestStatus.COMPLETED: StallEnd.COMPLETED,
        }.get(assessment.target, StallEnd.RELEASED if released else StallEnd.FAILED)
        if released:
            stall.released_at = now
        stall.save()
        closed = 1
        burnt = stall.burnt_gpu_hours(now)
        events.event_note(
            request=gpu_request, kind="cluster", reason="GangReleased" if released else "GangStallEnded",
            comment=f"The stall that began {stall.started_at:%Y-%m-%d %H:%M} UTC ended after "
                    f"{duration_words(now - stall.started_at)} ({stall.get_end_reason_display().lower()}); "
                    f"{decimal_words(burnt)} GPU-hours were burnt by pods waiting for the rest of the gang.",
        )  # fmt: skip
        if released:
            gang_notify(stall=stall, gpu_request=gpu_request, kind=NotificationKind.RELEASED,
                        text=assessment.comment, now=now)
    if assessment.teardown:
        from .services import allocation_enqueue

        allocation_enqueue(gpu_request=gpu_request, kind=JobKind.TEARDOWN)
    return opened, closed


def _close_orphan_stalls(stalls: list[GangStall], *, now: datetime) -> int:
    """Close open stalls of requests that left the reconciled statuses (a cancel, typically) at the time their
    request changed status, so no GPU time is counted after it."""
    requests = {pk: (status, changed_at) for pk, status, changed_at in GpuRequest.objects.filter(
        pk__in=[s.request_id for s in stalls]).values_list("pk", "status", "status_changed_at")}
    closed = 0
    for stall in stalls:
        status, changed_at = requests.get(stall.request_id, ("", None))
        if status in RECONCILED_STATUSES:
            continue  # still live, only not on this cluster's list of applied requests: leave it
        stall.ended_at = max(min(changed_at or now, now), stall.segment_started_at)
        stall.end_reason = StallEnd.CANCELLED if status == RequestStatus.CANCELLED else StallEnd.FAILED
        stall.save(update_fields=["ended_at", "end_reason", "updated_at"])
        closed += 1
    return closed


# --- notifications ----------------------------------------------------------------------------------------------


class TransientDeliveryError(Exception):
    """The notice could not be delivered now; a later attempt may succeed."""


class PermanentDeliveryError(Exception):
    """The notice will never be delivered as it is (e.g. the webhook answers 404)."""


def _request_url(gpu_request: GpuRequest) -> str:
    return f"{settings.PORTAL_BASE_URL or 'http://127.0.0.1:8000'}/requests/{gpu_request.pk}/"


def _payload(*, stall: GangStall, gpu_request: GpuRequest, kind: str, text: str, now: datetime) -> dict:
    burnt = stall.burnt_gpu_seconds(now)
    return {
        "event": f"gang.{kind}",
        "text": text,
        "request": {
            "id": gpu_request.pk, "name": gpu_request.name, "team": gpu_request.team.slug,
            "workload_class": gpu_request.workload_class, "url": _request_url(gpu_request),
        },  # fmt: skip
        "cluster": stall.cluster.name,
        "stall": {
            "started_at": stall.started_at.isoformat(),
            "detected_at": stall.detected_at.isoformat(),
            "released_at": stall.released_at.isoformat() if stall.released_at else None,
            "running_pods": stall.running_pods,
            "pending_pods": stall.pending_pods,
            "gpu_equivalents_running": f"{stall.gpu_equivalents_running:f}",
            "burnt_gpu_equivalent_seconds": f"{burnt.quantize(Decimal('0.000001')):f}",
            "pending": stall.pending_detail,
        },
        "at": now.isoformat(),
    }


def gang_notify(*, stall: GangStall, gpu_request: GpuRequest, kind: str, text: str, now: datetime,
                release_after: timedelta | None = None) -> list[int]:
    """Queue the notices of one stall event (team and platform e-mail, team webhook), each at most once, and
    dispatch their delivery after commit. Returns the ids of the notices queued now."""
    payload = _payload(stall=stall, gpu_request=gpu_request, kind=kind, text=text, now=now)
    team = gpu_request.team
    recipients = [a for a in [team.notification_email, *settings.PLATFORM_NOTIFICATION_EMAIL] if a]
    title = "stalled" if kind == NotificationKind.STALLED else "released after stalling"
    planned = []
    if recipients:
        body = render_to_string(f"provisioning/email/gang_{kind}.txt", {
            "gpu_request": gpu_request, "team": team, "stall": stall, "text": text, "payload": payload,
            "url": _request_url(gpu_request), "burnt_hours": decimal_words(stall.burnt_gpu_hours(now)),
            "equivalents": equivalents_words(stall.gpu_equivalents_running),
            "release_words": (f"If it is still stalled {duration_words(release_after)} after it was noticed, the "
                              "portal releases it: its objects are deleted and the request fails.")
                             if release_after else "The policy for this workload class never releases a stalled gang.",
        })  # fmt: skip
        subject = f"[GPU portal] {team.slug}/{gpu_request.name} (request #{gpu_request.pk}): gang {title}"
        planned.append((NotificationChannel.EMAIL, ", ".join(recipients),
                        {"subject": subject, "body": body, "to": recipients}))
    if team.webhook_url:
        planned.append((NotificationChannel.WEBHOOK, team.webhook_url, payload))
    created = []
    for channel, target, content in planned:
        notification, new = GangNotification.objects.get_or_create(
            stall=stall, kind=kind, channel=channel, defaults={"target": target, "payload": content}
        )
        if new:
            created.append(notification.pk)
    if kind == NotificationKind.STALLED and stall.notified_at is None:
        stall.notified_at = now
        stall.save(update_fields=["notified_at", "updated_at"])
    if not planned:
        events.event_note(request=gpu_request, reason="NobodyToNotify",
                          comment="Nobody could be notified: the team has no notification e-mail or webhook and "
                                  "PLATFORM_NOTIFICATION_EMAIL is empty.")
    if created:
        from . import tasks

        def dispatch() -> None:
            for pk in created:
                gang_notification_dispatch(pk, tasks.gang_notification_deliver)

        transaction.on_commit(dispatch)
    return created


def gang_notification_dispatch(notification_id: int, task) -> bool:
    # A broker outage leaves the row queued; the sweep sends it later.
    return send_now(task, notification_id, what=f"notification {notification_id}")


def _send_email(notification: GangNotification) -> None:
    content = notification.payload
    try:
        EmailMessage(subject=content["subject"], body=content["body"], from_email=settings.DEFAULT_FROM_EMAIL,
                     to=content["to"]).send(fail_silently=False)
    except (OSError, TimeoutError) as exc:  # smtplib errors are OSErrors
        raise TransientDeliveryError(f"{type(exc).__name__}: {exc}") from exc


def _post_webhook(notification: GangNotification) -> None:
    body = json.dumps(notification.payload).encode()
    # The team's current secret: a rotation takes effect for notices still waiting to be sent.
    secret = Team.objects.filter(requests__gang_stalls__pk=notification.stall_id).values_list(
        "webhook_secret", flat=True).first()
    delivery = webhook_request(url=notification.target, body=body, secret=secret or "", headers={
        "X-Portal-Event": notification.payload.get("event", ""), "X-Portal-Delivery": str(notification.pk),
    })  # fmt: skip
    try:
        webhook_post(delivery)
    except WebhookFailed as exc:
        raise (TransientDeliveryError if exc.transient else PermanentDeliveryError)(str(exc)) from exc


def gang_notification_deliver(*, notification_id: int) -> str:
    """Send one notice, once: the row is locked while sending and marked sent in the same transaction, so a
    redelivered task finds it sent. A transient failure is recorded, then raised for the task to retry."""
    with transaction.atomic():
        notification = GangNotification.objects.select_for_update(no_key=True).get(pk=notification_id)
        if notification.status in (NotificationStatus.SENT, NotificationStatus.FAILED):
            return "skipped"
        notification.attempts += 1
        try:
            if notification.channel == NotificationChannel.EMAIL:
                _send_email(notification)
            else:
                _post_webhook(notification)
        except PermanentDeliveryError as exc:
            notification.status, notification.message = NotificationStatus.FAILED, str(exc)
            notification.save()
            return NotificationStatus.FAILED
        except TransientDeliveryError as exc:
            notification.status = NotificationStatus.RETRYING
            notification.message = f"Attempt {notification.attempts} failed: {exc}"
            notification.save()
            failure = exc
        else:
            notification.status, notification.sent_at, notification.message = (
                NotificationStatus.SENT, timezone.now(), "")
            notification.save()
            return NotificationStatus.SENT
    raise failure


def gang_notification_fail(*, notification_id: int, message: str) -> None:
    GangNotification.objects.filter(pk=notification_id).exclude(status=NotificationStatus.SENT).update(
        status=NotificationStatus.FAILED, message=message, updated_at=timezone.now())


# --- the loop: LIST, then a bounded WATCH, per cluster ----------------------------------------------------------


@dataclass
class PodCache:
    """What one worker process knows of a cluster's pods: the last LIST plus the watch events since, by uid."""

    resource_version: str
    pods: dict[str, dict[str, Any]]
    listed_at: float  # time.monotonic()

    def apply(self, event_type: str, pod: dict[str, Any]) -> int | None:
        """Fold one watch event in; returns the request id whose pods changed (None for other pods)."""
        meta = pod.get("metadata") or {}
        self.resource_version = meta.get("resourceVersion") or self.resource_version
        if event_type == "BOOKMARK":
            return None
        uid = meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"
        previous = self.pods.get(uid)
        if event_type == "DELETED":
            self.pods.pop(uid, None)
        else:
            self.pods[uid] = pod
        request_id = request_id_of(pod, settings.PORTAL_LABEL_DOMAIN)
        if request_id is None and previous is not None:
            request_id = request_id_of(previous, settings.PORTAL_LABEL_DOMAIN)
        return request_id

    def pods_of(self, request_ids: set[int]) -> list[dict[str, Any]]:
        domain = settings.PORTAL_LABEL_DOMAIN
        return [p for p in self.pods.values() if request_id_of(p, domain) in request_ids]


# Per worker process, per cluster id. A run resumes from it only if the database says the last run of the cluster
# (by any worker) ended where this cache ends; otherwise it lists again.
_POD_CACHES: dict[int, PodCache] = {}
_CACHES_LOCK = threading.Lock()


@dataclass
class RunOutcome:
    cluster: str
    status: str
    message: str = ""
    listed: bool = False
    pods: int = 0
    requests: int = 0
    transitions: int = 0
    events: int = 0
    watch_events: int = 0
    cycles: int = 0

    def summary(self) -> str:
        if self.status != ReconcileStatus.OK:
            return f"{self.cluster}: {self.status} — {self.message}"
        how = "listed" if self.listed else "resumed the watch on"
        text = (f"{self.cluster}: {how} {self.pods} pods of {self.requests} active requests; {self.transitions} status "
                f"changes, {self.events} new events, {self.watch_events} watch events in {self.cycles} cycles")
        return text + (f" ({self.message})" if self.message else "")


def _lock(cluster: Cluster, ttl: float):
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "portal")
    return client.lock(f"{prefix}:reconcile:cluster:{cluster.pk}", timeout=ttl, blocking=False)


def _state_save(cluster: Cluster, **fields) -> ClusterReconcileState:
    state, _ = ClusterReconcileState.objects.update_or_create(cluster=cluster, defaults=fields)
    return state


def _list(kube: KubeClient) -> PodCache:
    snapshot = list_pods_snapshot(kube, label_selector=POD_SELECTOR)
    pods = {(p.get("metadata") or {}).get("uid") or id(p): p for p in snapshot.pods}
    return PodCache(resource_version=snapshot.resource_version, pods=pods, listed_at=time.monotonic())


def cluster_status_reconcile(
    *, cluster_id: int, watch_seconds: int | None = None, clock: Callable[[], datetime] = timezone.now,
    kube: KubeClient | None = None,
) -> RunOutcome:
    """One run of the reconciliation loop for a cluster (see the module docstring)."""
    cluster = Cluster.objects.get(pk=cluster_id)
    if watch_seconds is None:
        watch_seconds = settings.PORTAL_RECONCILE_WATCH_SECONDS
    if not cluster.api_server:
        note = (f"skipped: cluster {cluster.name} uses the {cluster.get_applier_display()} applier and has no API "
                "server, so the portal cannot see its pods; register it with --server to reconcile its requests.")
        _state_save(cluster, status=ReconcileStatus.SKIPPED, message=note, finished_at=timezone.now())
        return RunOutcome(cluster=cluster.name, status=ReconcileStatus.SKIPPED, message=note)
    lock = _lock(cluster, ttl=watch_seconds + settings.PORTAL_KUBE_TIMEOUT_SECONDS * 4 + 60)
    if not lock.acquire(blocking=False):
        return RunOutcome(cluster=cluster.name, status="busy",
                          message="another worker is reconciling this cluster; nothing done")
    own_client = kube is None
    try:
        kube = kube or KubeClient(cluster_connection(cluster))
    except KubeError as exc:  # unusable credentials or a refused URL: nothing to watch until someone fixes them
        with contextlib.suppress(Exception):
            lock.release()
        return _failed(cluster, RunOutcome(cluster=cluster.name, status=ReconcileStatus.ERROR),
                       f"cannot connect: {exc}")
    try:
        return _run(cluster, kube, watch_seconds, clock)
    finally:
        if own_client:
            kube.close()
        try:
            lock.release()
        except Exception:  # noqa: BLE001 - expired meanwhile: nothing to release
            pass


def _run(cluster: Cluster, kube: KubeClient, watch_seconds: int, clock: Callable[[], datetime]) -> RunOutcome:
    """LIST (or resume the watch), reconcile everything, then WATCH for the rest of the run. A resumed watch first
    catches up (the API server replays what happened since the last run) before the full cycle, so no decision is
    ever taken on a stale view; a watch that cannot resume (410 Gone, a broken connection) falls back to a LIST."""
    state = ClusterReconcileState.objects.filter(cluster=cluster).first()
    outcome = RunOutcome(cluster=cluster.name, status=ReconcileStatus.OK)
    with _CACHES_LOCK:
        cache = _POD_CACHES.pop(cluster.pk, None)  # put back only once this run has brought it up to date
    listed_at = state.listed_at if state else None
    resumable = (watch_seconds > 0 and cache is not None and state is not None and state.resource_version
                 and state.resource_version == cache.resource_version
                 and time.monotonic() - cache.listed_at < settings.PORTAL_RECONCILE_RELIST_SECONDS)
    if resumable:
        try:
            outcome.watch_events += _follow(cluster, kube, cache, CATCH_UP_SECONDS, clock, outcome, reconcile=False)
        except KubeError as exc:
            outcome.message, resumable = f"the watch failed ({exc}); listed the pods again", False
    if not resumable:
        try:
            cache, outcome.listed, listed_at = _list(kube), True, timezone.now()
        except KubeError as exc:
            return _failed(cluster, outcome, f"could not list pods: {exc}")

    started = time.perf_counter()
    cycle = status_reconcile(cluster=cluster, pods=cache.pods.values(), now=clock())
    cycle_ms = int((time.perf_counter() - started) * 1000)
    _add(outcome, cycle)
    outcome.requests = cycle.requests

    if watch_seconds > 0:
        try:
            outcome.watch_events += _follow(cluster, kube, cache, watch_seconds, clock, outcome, reconcile=True)
        except KubeError as exc:
            outcome.message = f"the watch failed ({exc}); listed the pods again"
            try:
                cache, outcome.listed, listed_at = _list(kube), True, timezone.now()
            except KubeError as list_exc:
                return _failed(cluster, outcome, f"{outcome.message}, which failed too: {list_exc}")
            _add(outcome, status_reconcile(cluster=cluster, pods=cache.pods.values(), now=clock()))
    outcome.pods = len(cache.pods)
    with _CACHES_LOCK:
        _POD_CACHES[cluster.pk] = cache
    _state_save(cluster, status=ReconcileStatus.OK, message=outcome.message, resource_version=cache.resource_version,
                listed_at=listed_at, finished_at=timezone.now(), pods=len(cache.pods), requests=outcome.requests,
                transitions=outcome.transitions, events_recorded=outcome.events, watch_events=outcome.watch_events,
                cycle_ms=cycle_ms)  # fmt: skip
    return outcome


def _failed(cluster: Cluster, outcome: RunOutcome, message: str) -> RunOutcome:
    """Record a run that could not see the cluster; the next run lists afresh."""
    _state_save(cluster, status=ReconcileStatus.ERROR, message=message, finished_at=timezone.now(),
                resource_version="")
    return RunOutcome(cluster=cluster.name, status=ReconcileStatus.ERROR, message=message,
                      transitions=outcome.transitions, events=outcome.events, cycles=outcome.cycles)


def _add(outcome: RunOutcome, cycle: CycleOutcome) -> None:
    outcome.cycles += 1
    outcome.transitions += len(cycle.transitions)
    outcome.events += cycle.events


def _follow(cluster: Cluster, kube: KubeClient, cache: PodCache, seconds: int, clock: Callable[[], datetime],
            outcome: RunOutcome, *, reconcile: bool) -> int:
    """Watch pod changes from the cache's resourceVersion until the server ends the watch after `seconds`, folding
    them into the cache; with `reconcile`, reconcile the requests whose pods changed, in batches. Returns the
    number of events seen."""
    seen = 0
    touched: set[int] = set()
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal last_flush
        if touched and reconcile:
            ids = set(touched)
            touched.clear()
            _add(outcome, status_reconcile(cluster=cluster, pods=cache.pods_of(ids), now=clock(), request_ids=ids))
        last_flush = time.monotonic()

    deadline = time.monotonic() + seconds + WATCH_FLUSH_SECONDS
    for event in watch_pods(kube, label_selector=POD_SELECTOR, timeout_seconds=seconds,
                            resource_version=cache.resource_version or None):
        seen += 1
        request_id = cache.apply(event.type, event.object)
        if request_id is not None:
            touched.add(request_id)
        if time.monotonic() - last_flush >= WATCH_FLUSH_SECONDS:
            flush()
        if time.monotonic() >= deadline:  # a server that ignores timeoutSeconds: stop on our own
            break
    flush()
    return seen


def status_reconcile_all() -> list[int]:
    """Beat: one reconciliation task per enabled cluster. Returns the cluster ids dispatched."""
    from . import tasks

    ids = list(Cluster.objects.filter(enabled=True).order_by("name").values_list("pk", flat=True))
    # A run that cannot start before the next beat is pointless: the next one replaces it.
    return [cluster_id for cluster_id in ids
            if send_now(tasks.cluster_status_reconcile, cluster_id, what=f"the reconciliation of cluster {cluster_id}",
                        expires=settings.PORTAL_RECONCILE_INTERVAL_SECONDS)]


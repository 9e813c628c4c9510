"""Stalled-gang notices: each stall event (stalled, released) is one portal notice (`portal.notices`), keyed by
stall and kind, to the team's and the platform team's e-mail and the team's webhook; portal queues each once,
delivers it once after commit (`portal.notice_deliver`) and sweeps what was lost, as it does every notice."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone

from intake import events
from intake.choices import EventKind
from intake.models import GpuRequest
from portal.notices import NoticeDraft, notice_queue_many

from ..choices import NotificationKind
from ..models import GangStall, stall_notice_key
from .rules import decimal_words, duration_words, equivalents_words


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


@dataclass(frozen=True)
class StallNotice:
    """One stall event to tell people about: its stall (saved), request, kind (stalled or released) and words."""

    stall: GangStall
    gpu_request: GpuRequest
    kind: str
    text: str
    release_after: timedelta | None = None


NOBODY_TO_NOTIFY = ("Nobody could be notified: the team has no notification e-mail or webhook and "
                    "PLATFORM_NOTIFICATION_EMAIL is empty.")


def _draft(notice: StallNotice, *, now: datetime) -> NoticeDraft:
    """The portal notice of one stall event: an e-mail to the team's and the platform team's addresses, and the
    team's webhook, whichever are set (portal.notices decides which)."""
    stall, gpu_request, kind, text = notice.stall, notice.gpu_request, notice.kind, notice.text
    payload = _payload(stall=stall, gpu_request=gpu_request, kind=kind, text=text, now=now)
    team = gpu_request.team
    title = "stalled" if kind == NotificationKind.STALLED else "released after stalling"
    release_after = notice.release_after
    body = render_to_string(f"provisioning/email/gang_{kind}.txt", {
        "gpu_request": gpu_request, "team": team, "stall": stall, "text": text, "payload": payload,
        "url": _request_url(gpu_request), "burnt_hours": decimal_words(stall.burnt_gpu_hours(now)),
        "equivalents": equivalents_words(stall.gpu_equivalents_running),
        "release_words": (f"If it is still stalled {duration_words(release_after)} after it was noticed, the "
                          "portal releases it: its objects are deleted and the request fails.")
                         if release_after else "The policy for this workload class never releases a stalled gang.",
    })  # fmt: skip
    subject = f"[GPU portal] {team.slug}/{gpu_request.name} (request #{gpu_request.pk}): gang {title}"
    return NoticeDraft(key=stall_notice_key(stall.pk, kind), team=team, subject=subject, body=body, payload=payload,
                       about=stall)


def _nobody_to_notify(team) -> bool:
    return not (team.webhook_url or team.notification_email or any(settings.PLATFORM_NOTIFICATION_EMAIL))


def gang_notify_many(*, notices: list[StallNotice], now: datetime) -> list[int]:
    """Queue the notices of many stall events, each at most once (per stall, kind and channel), in a few
    statements whatever their number; portal dispatches their delivery after commit. A stalled notice marks its
    stall notified. Returns the ids of the portal notices queued now."""
    if not notices:
        return []
    drafts, nobody, notified = [], [], []
    for notice in notices:
        if _nobody_to_notify(notice.gpu_request.team):
            nobody.append((notice.gpu_request, EventKind.NOTE, "NobodyToNotify", NOBODY_TO_NOTIFY))
        else:
            drafts.append(_draft(notice, now=now))
        if notice.kind == NotificationKind.STALLED and notice.stall.notified_at is None:
            notice.stall.notified_at, notice.stall.updated_at = now, timezone.now()
            notified.append(notice.stall)
    created = notice_queue_many(drafts=drafts)
    if notified:
        GangStall.objects.bulk_update(notified, ["notified_at", "updated_at"])
    if nobody:
        events.events_note_many(rows=nobody)
    return created


def gang_notify(*, stall: GangStall, gpu_request: GpuRequest, kind: str, text: str, now: datetime,
                release_after: timedelta | None = None) -> list[int]:
    """Queue the notices of one stall event (team and platform e-mail, team webhook), each at most once, and
    dispatch their delivery after commit. Returns the ids of the portal notices queued now."""
    return gang_notify_many(notices=[StallNotice(stall, gpu_request, kind, text, release_after)], now=now)

"""Stalled-gang notices: queue each notice of a stall event once (team and platform e-mail, team webhook), dispatch
it after commit, and deliver it once (`gang_notification_deliver`, run by the task)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from intake import events
from intake.choices import EventKind
from intake.models import GpuRequest
from portal.choices import NoticeChannel, NoticeStatus
from portal.dispatch import send_now
from portal.jobs import delivery_attempt
from portal.models import Team
from portal.webhooks import WebhookFailed, webhook_post, webhook_request

from ..choices import NotificationKind
from ..models import GangNotification, GangStall
from .rules import decimal_words, duration_words, equivalents_words


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


@dataclass(frozen=True)
class StallNotice:
    """One stall event to tell people about: its stall (saved), request, kind (stalled or released) and words."""

    stall: GangStall
    gpu_request: GpuRequest
    kind: str
    text: str
    release_after: timedelta | None = None


NOTIFY_MAX_ATTEMPTS = 6  # of `provisioning.gang_notification_deliver`

NOBODY_TO_NOTIFY = ("Nobody could be notified: the team has no notification e-mail or webhook and "
                    "PLATFORM_NOTIFICATION_EMAIL is empty.")


def _planned(notice: StallNotice, *, now: datetime) -> list[tuple[str, str, dict]]:
    """The notices of one stall event: (channel, target, content) for the team's and the platform's e-mail and
    the team's webhook, whichever are set."""
    stall, gpu_request, kind, text = notice.stall, notice.gpu_request, notice.kind, notice.text
    payload = _payload(stall=stall, gpu_request=gpu_request, kind=kind, text=text, now=now)
    team = gpu_request.team
    recipients = [a for a in [team.notification_email, *settings.PLATFORM_NOTIFICATION_EMAIL] if a]
    title = "stalled" if kind == NotificationKind.STALLED else "released after stalling"
    planned = []
    if recipients:
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
        planned.append((NoticeChannel.EMAIL, ", ".join(recipients),
                        {"subject": subject, "body": body, "to": recipients}))
    if team.webhook_url:
        planned.append((NoticeChannel.WEBHOOK, team.webhook_url, payload))
    return planned


def gang_notify_many(*, notices: list[StallNotice], now: datetime) -> list[int]:
    """Queue the notices of many stall events, each notice at most once (per stall, kind and channel), in a few
    statements whatever their number, and dispatch their delivery after commit. A stalled notice marks its stall
    notified. Returns the ids of the notices queued now."""
    if not notices:
        return []
    existing = set(GangNotification.objects.filter(stall__in=[n.stall.pk for n in notices]).values_list(
        "stall_id", "kind", "channel"))
    rows, nobody, notified = [], [], []
    for notice in notices:
        planned = _planned(notice, now=now)
        rows.extend(GangNotification(stall=notice.stall, kind=notice.kind, channel=channel, target=target,
                                     payload=content)
                    for channel, target, content in planned
                    if (notice.stall.pk, notice.kind, channel) not in existing)
        if notice.kind == NotificationKind.STALLED and notice.stall.notified_at is None:
            notice.stall.notified_at, notice.stall.updated_at = now, timezone.now()
            notified.append(notice.stall)
        if not planned:
            nobody.append((notice.gpu_request, EventKind.NOTE, "NobodyToNotify", NOBODY_TO_NOTIFY))
    created = [n.pk for n in GangNotification.objects.bulk_create(rows)] if rows else []
    if notified:
        GangStall.objects.bulk_update(notified, ["notified_at", "updated_at"])
    if nobody:
        events.events_note_many(rows=nobody)
    if created:
        def dispatch() -> None:
            for pk in created:
                gang_notification_dispatch(pk)

        transaction.on_commit(dispatch)
    return created


def gang_notify(*, stall: GangStall, gpu_request: GpuRequest, kind: str, text: str, now: datetime,
                release_after: timedelta | None = None) -> list[int]:
    """Queue the notices of one stall event (team and platform e-mail, team webhook), each at most once, and
    dispatch their delivery after commit. Returns the ids of the notices queued now."""
    return gang_notify_many(notices=[StallNotice(stall, gpu_request, kind, text, release_after)], now=now)


def gang_notification_dispatch(notification_id: int) -> bool:
    # A broker outage leaves the row queued; the sweep sends it later.
    return send_now("provisioning.gang_notification_deliver", notification_id, what=f"notification {notification_id}")


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
        if notification.status in (NoticeStatus.SENT, NoticeStatus.FAILED):
            return "skipped"
        outcome, failure = delivery_attempt(notification, _send, permanent=PermanentDeliveryError,
                                            transient=TransientDeliveryError)
    if failure is not None:
        raise failure
    return outcome


def _send(notification: GangNotification) -> None:
    if notification.channel == NoticeChannel.EMAIL:
        _send_email(notification)
    else:
        _post_webhook(notification)


def gang_notification_fail(*, notification_id: int, message: str) -> None:
    GangNotification.objects.filter(pk=notification_id).exclude(status=NoticeStatus.SENT).update(
        status=NoticeStatus.FAILED, message=message, updated_at=timezone.now())

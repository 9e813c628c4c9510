"""Notices to a team by e-mail and its signed webhook, each sent once (see `portal.models.Notice`).

Features above portal (budgets, leases, idle GPUs) say what happened with `notice_queue`; delivery is one Celery
task per notice, after commit. The webhook is signed and sent exactly as the stalled-gang notices are
(`portal.webhooks`)."""
from __future__ import annotations

import json
import logging
from typing import Sequence

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.utils import timezone

from .choices import NoticeChannel, NoticeStatus
from .dispatch import send_now
from .models import Notice, Team
from .jobs import delivery_attempt
from .outbox import notice_rows_sweep
from .webhooks import WebhookFailed, webhook_post, webhook_request

logger = logging.getLogger(__name__)

NOTICE_MAX_ATTEMPTS = 5  # of `portal.notice_deliver`


class TransientNoticeError(Exception):
    pass


def notice_queue(*, key: str, team: Team, subject: str, body: str, payload: dict,
                 recipients: Sequence[str] | None = None) -> list[int]:
    """Queue the notice `key` to the team's e-mail (and the platform team's) and webhook, each channel once, and
    dispatch delivery after commit. `recipients` replaces those e-mail addresses (an idle notice goes to the
    requester and the team). Returns the ids queued now (empty when they were queued before)."""
    if recipients is None:
        recipients = [team.notification_email, *settings.PLATFORM_NOTIFICATION_EMAIL]
    recipients = [a for a in recipients if a]
    planned = []
    if recipients:
        planned.append((NoticeChannel.EMAIL, ", ".join(recipients), {"subject": subject, "body": body, "to": recipients}))
    if team.webhook_url:
        planned.append((NoticeChannel.WEBHOOK, team.webhook_url, payload))
    created = []
    for channel, target, content in planned:
        try:
            with transaction.atomic():  # a concurrent run that queued it first leaves this one a no-op
                notice, new = Notice.objects.get_or_create(
                    key=key, channel=channel, defaults={"team": team, "target": target, "payload": content})
        except IntegrityError:
            continue
        if new:
            created.append(notice.pk)
    if created:
        transaction.on_commit(lambda: [notice_dispatch(pk) for pk in created])
    return created


def notice_dispatch(notice_id: int) -> bool:
    # A broker outage leaves the row queued; the next beat run sends it.
    return send_now("portal.notice_deliver", notice_id, what=f"notice {notice_id}")


def notices_sweep() -> int:
    """The notices' outbox sweep (portal.outbox): queued ones whose message was lost, and ones waiting to retry
    whose retry message was lost, are sent again."""
    return notice_rows_sweep(
        Notice.objects.all(), dispatch=notice_dispatch,
        fail=lambda pk, message: notice_fail(notice_id=pk, message=message),
        older_than_seconds=settings.PORTAL_NOTIFICATION_SWEEP_GRACE_SECONDS,
        stuck_after_seconds=settings.PORTAL_JOB_STUCK_SECONDS, max_attempts=NOTICE_MAX_ATTEMPTS)


def _send(notice: Notice) -> None:
    if notice.channel == NoticeChannel.EMAIL:
        content = notice.payload
        try:
            EmailMessage(subject=content["subject"], body=content["body"], from_email=settings.DEFAULT_FROM_EMAIL,
                         to=content["to"]).send(fail_silently=False)
        except (OSError, TimeoutError) as exc:  # smtplib errors are OSErrors
            raise TransientNoticeError(f"{type(exc).__name__}: {exc}") from exc
        return
    body = json.dumps(notice.payload).encode()
    # The team's current secret: a rotation takes effect for notices still waiting to be sent.
    delivery = webhook_request(url=notice.target, body=body, secret=notice.team.webhook_secret or "", headers={
        "X-Portal-Event": str(notice.payload.get("event", "")), "X-Portal-Delivery": f"notice-{notice.pk}"})
    try:
        webhook_post(delivery)
    except WebhookFailed as exc:
        if exc.transient:
            raise TransientNoticeError(str(exc)) from exc
        raise


def notice_deliver(*, notice_id: int) -> str:
    """Send one notice, once: the row is locked while sending and marked sent in the same transaction, so a
    redelivered task finds it sent. A transient failure is recorded, then raised for the task to retry."""
    with transaction.atomic():
        notice = Notice.objects.select_for_update(no_key=True, of=("self",)).select_related("team").get(pk=notice_id)
        if notice.status in (NoticeStatus.SENT, NoticeStatus.FAILED):
            return "skipped"
        outcome, failure = delivery_attempt(notice, _send, permanent=WebhookFailed, transient=TransientNoticeError)
    if failure is not None:
        raise failure
    return outcome


def notice_fail(*, notice_id: int, message: str) -> None:
    Notice.objects.filter(pk=notice_id).exclude(status=NoticeStatus.SENT).update(
        status=NoticeStatus.FAILED, message=message, updated_at=timezone.now())

"""Notices to a team by e-mail and its signed webhook, each sent once (see `portal.models.Notice`).

Features above portal (budgets, leases, idle GPUs, stalled gangs) say what happened with `notice_queue`, or with
`notice_queue_many` for many facts at once (a reconciliation cycle's stalls); delivery is one Celery task per notice
(`portal.notice_deliver`), after commit, and one sweep (`notices_sweep`) sends again what was lost. The webhook is
signed by `portal.webhooks`."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Sequence

from django.conf import settings
from django.core.mail import EmailMessage
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, models, transaction
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


@dataclass(frozen=True)
class NoticeDraft:
    """One fact to tell a team, as `notice_queue` takes it; `about` is the row it is about (its page lists it)."""

    key: str
    team: Team
    subject: str
    body: str
    payload: dict
    recipients: Sequence[str] | None = None
    about: models.Model | None = None


def _planned(draft: NoticeDraft) -> list[Notice]:
    """The draft's unsaved rows: its e-mail (to `recipients`, by default the team's and the platform team's
    addresses) and the team's webhook, whichever are set."""
    team = draft.team
    recipients = draft.recipients
    if recipients is None:
        recipients = [team.notification_email, *settings.PLATFORM_NOTIFICATION_EMAIL]
    recipients = [a for a in recipients if a]
    about = {} if draft.about is None else {
        "about_type": ContentType.objects.get_for_model(draft.about), "about_id": draft.about.pk}
    planned = []
    if recipients:
        planned.append(Notice(key=draft.key, team=team, channel=NoticeChannel.EMAIL, target=", ".join(recipients),
                              payload={"subject": draft.subject, "body": draft.body, "to": recipients}, **about))
    if team.webhook_url:
        planned.append(Notice(key=draft.key, team=team, channel=NoticeChannel.WEBHOOK, target=team.webhook_url,
                              payload=draft.payload, **about))
    return planned


def _queue_one(row: Notice) -> int | None:
    """Insert one planned row unless (key, channel) is there; its id when inserted now."""
    try:
        with transaction.atomic():  # a concurrent run that queued it first leaves this one a no-op
            notice, new = Notice.objects.get_or_create(key=row.key, channel=row.channel, defaults={
                "team": row.team, "target": row.target, "payload": row.payload, "about_type": row.about_type,
                "about_id": row.about_id})
    except IntegrityError:
        return None
    return notice.pk if new else None


def _dispatch_on_commit(created: list[int]) -> None:
    if created:
        transaction.on_commit(lambda: [notice_dispatch(pk) for pk in created])


def notice_queue(*, key: str, team: Team, subject: str, body: str, payload: dict,
                 recipients: Sequence[str] | None = None, about: models.Model | None = None) -> list[int]:
    """Queue the notice `key` to the team's e-mail (and the platform team's) and webhook, each channel once, and
    dispatch delivery after commit. `recipients` replaces those e-mail addresses (an idle notice goes to the
    requester and the team). Returns the ids queued now (empty when they were queued before)."""
    draft = NoticeDraft(key=key, team=team, subject=subject, body=body, payload=payload, recipients=recipients,
                        about=about)
    created = [pk for pk in map(_queue_one, _planned(draft)) if pk is not None]
    _dispatch_on_commit(created)
    return created


def notice_queue_many(*, drafts: Sequence[NoticeDraft]) -> list[int]:
    """Queue many notices as `notice_queue` does, each (key, channel) once, in a few statements whatever their
    number (one to read which are queued already, one to insert the rest), and dispatch delivery after commit.
    Returns the ids queued now."""
    planned = [row for draft in drafts for row in _planned(draft)]
    if not planned:
        return []
    seen = set(Notice.objects.filter(key__in={row.key for row in planned}).order_by().values_list("key", "channel"))
    rows = []
    for row in planned:
        if (row.key, row.channel) not in seen:
            seen.add((row.key, row.channel))
            rows.append(row)
    if not rows:
        return []
    # A row a concurrent run inserted since the read is left as it was (ON CONFLICT sets its key to itself) and is
    # dispatched once more, which is harmless (delivery skips a sent notice); no savepoint, no error to abort the
    # caller's transaction.
    created = [row.pk for row in Notice.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["key", "channel"], update_fields=["key"])]
    _dispatch_on_commit(created)
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

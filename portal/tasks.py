"""Portal-wide background tasks."""
from __future__ import annotations

import logging

from celery import shared_task

from . import notices, request_context, services
from .outbox import outboxes_sweep
from .retrying import RetryingTask

logger = logging.getLogger(__name__)


@shared_task(name="portal.ping", ignore_result=True)
def ping() -> None:
    """Proof that a worker consumes the queue: records a heartbeat (worker, time, request id) in the cache.

    Beat sends it every minute (settings.CELERY_BEAT_SCHEDULE); the platform team can send one on demand
    (`POST /api/v1/ops/ping/`) and follow its request id into the worker's logs.
    """
    heartbeat = services.worker_heartbeat_record(
        worker=ping.request.hostname or "unknown",
        task_id=ping.request.id or "",
        request_id=request_context.request_id() or "",
    )
    logger.info("pong from %s", heartbeat["worker"])


@shared_task(name="portal.outbox_sweep")
def outbox_sweep() -> dict[str, int]:
    """Beat: every outbox's sweep (portal.outbox); returns how many each sent again."""
    return outboxes_sweep()


NOTICE_MAX_ATTEMPTS = notices.NOTICE_MAX_ATTEMPTS


@shared_task(bind=True, base=RetryingTask, name="portal.notice_deliver", max_retries=NOTICE_MAX_ATTEMPTS,
             acks_late=True)
def notice_deliver(self, notice_id: int) -> str:
    try:
        return notices.notice_deliver(notice_id=notice_id)
    except notices.TransientNoticeError as exc:
        return self.retry_or_fail(exc, fail=lambda message: notices.notice_fail(notice_id=notice_id, message=message))

"""The base of every task that retries a transient failure: backoff, then give up after its last attempt.

A task built on it (`@shared_task(bind=True, base=RetryingTask, max_retries=N)`) calls `retry_or_fail` when its
service raises a transient error: the task runs again later (exponential backoff, capped, never sooner than a
server's Retry-After) or, after attempt N, `fail(message)` records that it gave up. Permanent errors are the
task's own business: they fail the row at once."""
from __future__ import annotations

from collections.abc import Callable

from celery import Task

BACKOFF_CAP_SECONDS = 300


class RetryingTask(Task):
    abstract = True

    def backoff_base(self) -> float:
        """Seconds before the first retry; each next one waits twice as long."""
        return 2.0

    def attempt(self) -> int:
        return self.request.retries + 1

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        delay = min(BACKOFF_CAP_SECONDS, self.backoff_base() * 2 ** max(attempt - 1, 0))
        return max(delay, min(retry_after or 0, BACKOFF_CAP_SECONDS))

    def retry_or_fail(self, exc: Exception, *, fail: Callable[[str], object],
                      retrying: Callable[[str], dict] | None = None, args: list | None = None,
                      retry_after: float | None = None) -> str:
        """After the last attempt `fail("Gave up after N attempts: ...")` and "failed"; otherwise raise the retry.
        `retrying(message)` records the attempt that failed and returns the retry's keyword arguments."""
        attempt = self.attempt()
        if attempt >= self.max_retries:
            fail(f"Gave up after {attempt} attempts: {exc}")
            return "failed"
        kwargs = retrying(f"Attempt {attempt} failed, retrying: {exc}") if retrying is not None else None
        raise self.retry(args=args, kwargs=kwargs, countdown=self.backoff(attempt, retry_after), exc=exc)

"""A beat schedule that fires at a fixed offset within its period, so that the project's periodic tasks, most of
which run every minute, are spread over the minute instead of all being sent in the same second (a solo or
busy worker then has one thing to do at a time, and a sweep is never stuck behind every other periodic task).

Celery's own `schedule` counts its period from whenever beat last ran the entry, so every entry that beat started
with the same period fires together for ever; this one fires at the instants t with (t - offset) % period == 0
(epoch seconds), whenever beat started. It subclasses Celery's `schedule` (celery/schedules.py, Celery 5.7.0),
overriding what that class derives from the last run: the remaining time, is_due, equality and pickling (beat's
shelve file stores schedules by pickling them).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery.schedules import schedstate, schedule


class offset_schedule(schedule):  # noqa: N801 - named like Celery's schedule classes (schedule, crontab, solar)
    """Every `run_every` seconds, at `offset` seconds into each period (counted from the Unix epoch, in UTC)."""

    def __init__(self, run_every: float | timedelta, offset: float = 0, nowfun: Callable | None = None,
                 app: Any = None) -> None:
        super().__init__(run_every=run_every, nowfun=nowfun, app=app)
        if self.seconds <= 0:
            raise ValueError("an offset schedule needs a positive period")
        self.offset = offset % self.seconds

    def next_after(self, moment: float) -> float:
        """The first firing instant (epoch seconds) strictly after `moment`."""
        period = self.seconds
        return (math.floor((moment - self.offset) / period) + 1) * period + self.offset

    def remaining_estimate(self, last_run_at: datetime) -> timedelta:
        last = self.maybe_make_aware(last_run_at).timestamp()
        return timedelta(seconds=self.next_after(last) - self.maybe_make_aware(self.now()).timestamp())

    def is_due(self, last_run_at: datetime) -> schedstate:
        remaining = self.remaining_estimate(last_run_at).total_seconds()
        if remaining > 0:
            return schedstate(is_due=False, next=remaining)
        now = self.maybe_make_aware(self.now()).timestamp()
        return schedstate(is_due=True, next=self.next_after(now) - now)

    def __repr__(self) -> str:
        return f"<freq: {self.human_seconds}, at +{self.offset:g}s>"

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, offset_schedule):
            return (self.run_every, self.offset) == (other.run_every, other.offset)
        return False

    def __hash__(self) -> int:
        return hash((self.run_every, self.offset))

    def __reduce__(self) -> tuple:
        return self.__class__, (self.run_every, self.offset, self.nowfun)

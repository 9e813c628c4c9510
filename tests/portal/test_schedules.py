"""The beat schedule: every periodic task at its own second (portal.schedules.offset_schedule), so that beat never
sends several of them to the workers in the same second, whenever beat was started."""
from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from celery.beat import Scheduler
from django.conf import settings

from portal import celery_app
from portal.schedules import offset_schedule

MIDNIGHT = datetime(2026, 12, 1, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def beat_sends(*, hours: float = 1, start: datetime = MIDNIGHT + timedelta(seconds=0.4)) -> list[tuple[int, str]]:
    """What Celery beat's own scheduler sends with the project's schedule over `hours`, started at `start`, ticking
    every tenth of a second on a clock of its own: (whole second, entry name) per message."""
    clock = Clock(start)
    sent: list[tuple[int, str]] = []

    class Recording(Scheduler):
        def apply_async(self, entry, producer=None, advance=True, **kwargs):
            sent.append((int(clock.now.timestamp()), entry.name))

    entries = {name: {**entry, "schedule": offset_schedule(entry["schedule"].run_every, entry["schedule"].offset,
                                                           nowfun=clock)}
               for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}
    scheduler = Recording(celery_app, schedule={}, lazy=True)
    scheduler.producer = None  # recorded, never sent: no broker connection
    scheduler.update_from_dict(entries)  # each entry's first "now" comes from its schedule's clock
    while clock.now < start + timedelta(hours=hours):
        scheduler.tick()
        clock.now += timedelta(seconds=0.1)
    return sent


def test_beat_never_sends_two_periodic_tasks_in_the_same_second():
    sent = beat_sends()

    crowded = {second: n for second, n in Counter(second for second, _ in sent).items() if n > 1}
    assert crowded == {}
    per_entry = Counter(name for _, name in sent)
    assert per_entry == {"outbox-sweep": 60, "portal.ping": 60,
                         "provisioning-status-reconcile": 60, "mig-plans-advance": 240, "inventory-sync": 12,
                         "chargeback-usage-collect": 12, "request-wait-refresh": 60, "intake-lease-sweep": 12,
                         "chargeback-budget-thresholds": 4, "admission-checks-sync": 240, "chargeback-idle-scan": 12}


def test_the_sweep_runs_at_its_second_of_every_minute_whenever_beat_started():
    for started in (MIDNIGHT + timedelta(seconds=4.9), MIDNIGHT + timedelta(minutes=7, seconds=33)):
        sweeps = [second for second, name in beat_sends(hours=0.1, start=started) if name == "outbox-sweep"]
        assert sweeps and {second % 60 for second in sweeps} == {5}
        assert all(b - a == 60 for a, b in zip(sweeps, sweeps[1:]))


def test_an_offset_schedule_is_due_at_its_second_and_survives_beats_shelve():
    clock = Clock(MIDNIGHT + timedelta(seconds=64))
    every_minute_at_5 = offset_schedule(60, offset=5, nowfun=clock)

    assert every_minute_at_5.is_due(MIDNIGHT + timedelta(seconds=5)) == (False, 1)  # ran at 0:05, it is 1:04
    clock.now = MIDNIGHT + timedelta(seconds=65)
    assert every_minute_at_5.is_due(MIDNIGHT + timedelta(seconds=5)) == (True, 60)
    clock.now = MIDNIGHT + timedelta(seconds=130)  # beat was down at 1:05: it runs now, then back at its second
    assert every_minute_at_5.is_due(MIDNIGHT + timedelta(seconds=5)) == (True, 55)
    assert offset_schedule(15, offset=47).offset == 2  # an offset longer than the period wraps

    restored = pickle.loads(pickle.dumps(every_minute_at_5))
    assert (restored.run_every, restored.offset) == (timedelta(seconds=60), 5) and restored == every_minute_at_5
    assert offset_schedule(60, offset=6) != every_minute_at_5


def test_a_period_of_zero_turns_an_entry_off():
    code = ("import django; django.setup(); from django.conf import settings; "
            "print(sorted(settings.CELERY_BEAT_SCHEDULE))")
    env = {**os.environ, "PORTAL_INVENTORY_SYNC_SECONDS": "0", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2], check=True).stdout
    names = ast.literal_eval(out.strip().splitlines()[-1])
    assert "inventory-sync" not in names and "outbox-sweep" in names and len(names) == 10

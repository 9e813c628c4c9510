"""Heartbeat files for the probes of the Celery worker and beat, and the check the probes run.

- Worker: `celery -A portal worker --heartbeat-file PATH` adds `WorkerHeartbeat`, a bootstep that touches PATH
  every `--heartbeat-interval` seconds (30 by default) from the worker's timer. The timer runs in the worker's
  event loop, so a file that stops getting younger means a loop that stopped turning (a hung worker), not just
  a live process.
- Beat: `celery -A portal beat --scheduler portal.heartbeat:HeartbeatScheduler` with `BEAT_HEARTBEAT_FILE` set
  touches that file after every tick. Beat ticks at least every `beat_max_loop_interval` (300 s by default;
  the one-minute `portal.ping` makes it tick every minute).
- Probe: `python -m portal.heartbeat_check PATH --max-age SECONDS` (portal/heartbeat_check.py).

Celery API: bootsteps and `app.user_options` (celery 5.x, docs "Extensions and Bootsteps"); the scheduler's
`tick()` (celery/beat.py).
"""
from __future__ import annotations

import os
from pathlib import Path

from celery import bootsteps
from celery.beat import PersistentScheduler

WORKER_INTERVAL = 30.0  # default seconds between two touches of the worker's heartbeat file
BEAT_FILE_ENV = "BEAT_HEARTBEAT_FILE"


def touch(path: str | os.PathLike[str]) -> None:
    Path(path).touch()


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Touches the worker's heartbeat file from its timer (enabled by `--heartbeat-file`)."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, parent, heartbeat_file: str | None = None, heartbeat_interval: float | None = None,
                 **options):
        super().__init__(parent, **options)
        self.path = heartbeat_file
        self.interval = float(heartbeat_interval or WORKER_INTERVAL)
        self.tref = None

    def include_if(self, parent) -> bool:
        return bool(self.path)

    def start(self, parent) -> None:
        touch(self.path)
        self.tref = parent.timer.call_repeatedly(self.interval, touch, (self.path,), priority=10)

    def stop(self, parent) -> None:
        if self.tref:
            self.tref.cancel()
            self.tref = None


class HeartbeatScheduler(PersistentScheduler):
    """Beat's default scheduler that also touches `BEAT_HEARTBEAT_FILE` after each tick."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.heartbeat_file = os.environ.get(BEAT_FILE_ENV, "")
        if not self.heartbeat_file:
            raise RuntimeError(f"HeartbeatScheduler needs {BEAT_FILE_ENV}: the file beat's probes check")

    def tick(self, *args, **kwargs):
        delay = super().tick(*args, **kwargs)
        touch(self.heartbeat_file)
        return delay


def register(app) -> None:
    """Add the worker's `--heartbeat-file` option and its bootstep to the Celery app."""
    from click import Option

    app.user_options["worker"].add(
        Option(("--heartbeat-file",), default=None, help="Touch this file periodically (liveness probe).")
    )
    app.user_options["worker"].add(
        Option(("--heartbeat-interval",), type=float, default=WORKER_INTERVAL, help="Seconds between touches.")
    )
    app.steps["worker"].add(WorkerHeartbeat)

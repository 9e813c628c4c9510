"""A busy broker for fault tests: a thread that keeps a number of real portal tasks waiting in the private Redis's
default queue, topping it up as the worker takes them (and again after Redis restarts), and records how many of
them were waiting each time it looked, so a test can show the queue was never empty of them. Only its own task is
counted: the beat's sweeps also pass through the queue, but each takes milliseconds, and a worker that drains a
burst of them can leave the queue empty between two looks."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

from celery import Celery

QUEUE = "celery"  # the portal's default queue (task_default_queue)


class KeepBusy:
    """`with KeepBusy(url, "provisioning.cluster_status_reconcile", [cluster_id], backlog=3) as busy: ...`"""

    def __init__(self, broker_url: str, task: str, args: Sequence, *, backlog: int, interval: float = 0.05) -> None:
        self.app = Celery("fault-tests-busy", broker=broker_url, set_as_current=False)
        self.app.conf.broker_connection_retry_on_startup = False
        self.task, self.args, self.backlog, self.interval = task, list(args), backlog, interval
        self.samples: list[tuple[float, int]] = []  # (time.monotonic(), messages waiting)
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="keep-busy", daemon=True)

    def __enter__(self) -> KeepBusy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self.app.connection_for_write() as connection:
                    connection.ensure_connection(max_retries=0)
                    client = connection.default_channel.client
                    with self.app.producer_or_acquire() as producer:
                        while not self._stop.is_set():
                            waiting = self._waiting(client)
                            self.samples.append((time.monotonic(), waiting))
                            for _ in range(self.backlog - waiting):
                                self.app.send_task(self.task, args=self.args, producer=producer, retry=False)
                                self.sent += 1
                            self._stop.wait(self.interval)
            except Exception:  # noqa: BLE001 - Redis is restarting (refused, reset, no route yet): look again soon
                self._stop.wait(self.interval)

    def _waiting(self, client) -> int:
        """How many messages of this thread's task wait in the queue (kombu's envelope names it in headers.task)."""
        return sum(1 for raw in client.lrange(QUEUE, 0, -1)
                   if json.loads(raw).get("headers", {}).get("task") == self.task)

    def fewest_waiting(self, since: float) -> int | None:
        """The fewest messages seen waiting from `since` (time.monotonic()) on; None if not looked since."""
        seen = [waiting for at, waiting in self.samples if at >= since]
        return min(seen) if seen else None

    def wait_full(self, timeout: float = 30, after: float = float("-inf")) -> float:
        """Wait until the queue holds the whole backlog in a look taken after `after` (time.monotonic()); returns
        when. After a Redis restart pass the restart's time: until the thread has reconnected, its last look is
        still the full queue of the Redis that is gone."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.samples and self.samples[-1][0] > after and self.samples[-1][1] >= self.backlog:
                return self.samples[-1][0]
            time.sleep(self.interval)
        raise AssertionError(f"the broker never held {self.backlog} waiting messages (last: {self.samples[-1:]})")

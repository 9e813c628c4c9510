"""API load benchmark: the intake create endpoint and the request list under concurrent clients, against gunicorn
with 1, 2, ... N sync workers in turn (2 as deployed), beside a bare authenticated DRF endpoint (GET /api/v1/me/) on
the same server in the same run.

    python bench/api_load.py [--workers 2] [--clients 32] [--seconds 12] [--rounds 3] [--private]

By default it creates a database `portal_bench_api` (`BENCH_DATABASE` overrides the name) on the PostgreSQL server
of DATABASE_URL (only the server part is used; default postgres://postgres@127.0.0.1:5432) and drops it at the
end, and uses BENCH_REDIS_URL (default redis://127.0.0.1:6379/14) for the cache under its own key prefix.
`--private` starts a PostgreSQL cluster and a Redis of its own instead (tests/faults/harness.py). It migrates,
bootstraps teams, users and tokens and the demo clusters with the management commands, adds requests (copies of a
submitted one, in this process) until `--list-rows` are visible to the list and vacuums the table as autovacuum
would after such a load. Then for each worker count from 1 to `--workers` it starts gunicorn with that many
workers (PORTAL_API_RATE raised so throttling never refuses) and drives each endpoint in turn with `--clients`
threads, in interleaved rounds (so load from elsewhere on the machine weighs on all three alike), `--seconds` per
endpoint in all: throughput, p50 and p99 latency, errors; then with as many clients as workers (the service time).
Every worker count gets the same requests: the same answers, the same client count and durations. Last, it counts
the database queries of one list call (in this process, with CaptureQueriesContext) at two data sizes: a constant
count means no N+1.

Goals, printed for each worker count with the bare endpoint's figure from the same run, the ratio and OK or NOT
met: create and list each >= 50% of the bare endpoint's throughput; create p99 < 100 ms with one client per worker
(the service time); and the list query count constant. With 32 clients always waiting, latency is queueing: about
32 / throughput (Little's law), so at 32 clients it follows from the throughput and is printed beside it.
"""
from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.faults.harness import (  # noqa: E402
    ExistingPostgres, ExistingRedis, PortalStack, PrivatePostgres, PrivateRedis,
)

DBNAME = os.environ.get("BENCH_DATABASE", "portal_bench_api")
# An inference request (MIG on gpu-east); not approved automatically, so a create dispatches nothing.
VALID_ANSWERS = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
                 "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
CREATE_RATIO_TARGET = 0.5
LIST_RATIO_TARGET = 0.5
P99_TARGET_MS = 100.0


@dataclass
class Phase:
    name: str
    method: str
    path: str
    body_for: object = None  # (client, n) -> dict
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000


class Client(threading.Thread):
    """One client: requests back to back on a keep-alive connection (reopened when the server closes it)."""

    def __init__(self, number: int, base_url: str, token: str, phase: Phase, start: threading.Event,
                 measure_from: list[float], stop_at: list[float]) -> None:
        super().__init__(daemon=True)
        parts = urlsplit(base_url)
        self.number, self.host, self.port, self.token, self.phase = number, parts.hostname, parts.port, token, phase
        self.start_event, self.measure_from, self.stop_at = start, measure_from, stop_at
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.connection: http.client.HTTPConnection | None = None

    def _request(self, body: bytes | None) -> int:
        if self.connection is None:
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            self.connection.request(self.phase.method, self.phase.path, body=body, headers=headers)
            answer = self.connection.getresponse()
            answer.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            raise
        if answer.getheader("Connection", "").lower() == "close" or answer.will_close:
            self.connection.close()
            self.connection = None
        return answer.status

    def run(self) -> None:
        self.start_event.wait()
        n = 0
        while time.perf_counter() < self.stop_at[0]:
            n += 1
            body = None
            if self.phase.body_for is not None:
                body = json.dumps(self.phase.body_for(self.number, n)).encode()
            started = time.perf_counter()
            try:
                status = self._request(body)
                error = None if status < 400 else f"HTTP {status}"
            except (OSError, http.client.HTTPException) as exc:
                error = type(exc).__name__
            ended = time.perf_counter()
            if started < self.measure_from[0]:
                continue  # warm-up
            if error:
                self.errors[error] = self.errors.get(error, 0) + 1
            else:
                self.latencies.append(ended - started)


def drive(stack: PortalStack, token: str, phase: Phase, clients: int, seconds: float, warmup: float) -> Phase:
    start = threading.Event()
    now = time.perf_counter()
    measure_from, stop_at = [now + warmup], [now + warmup + seconds]
    threads = [Client(i, stack.base_url, token, phase, start, measure_from, stop_at) for i in range(clients)]
    for thread in threads:
        thread.start()
    begin = time.perf_counter()
    measure_from[0], stop_at[0] = begin + warmup, begin + warmup + seconds
    start.set()
    for thread in threads:
        thread.join(timeout=seconds + warmup + 60)
    phase.seconds += seconds
    for thread in threads:
        phase.latencies.extend(thread.latencies)
        for error, count in thread.errors.items():
            phase.errors[error] = phase.errors.get(error, 0) + count
    return phase


def django_setup(stack: PortalStack) -> None:
    """Django in this process, against the benchmark database (idempotent)."""
    os.environ.update({k: v for k, v in stack.env.items() if k in (
        "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "PORTAL_API_RATE", "PORTAL_DATA_DIR")})
    os.environ["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ["CACHE_KEY_PREFIX"] = stack.env.get("CACHE_KEY_PREFIX", "portal")
    import django

    django.setup()


def seed_requests(stack: PortalStack, visible: int) -> int:
    """Copies of the newest request (its answers and decision), added in one transaction until `visible` requests
    exist, so the list is measured over a realistic history. Returns how many exist."""
    django_setup(stack)
    from django.db import transaction

    from intake.models import GpuRequest

    with transaction.atomic():
        model = GpuRequest.objects.order_by("-id").first()
        missing = visible - GpuRequest.objects.count()
        fields = ("team_id", "answers", "defaulted_answers", "decision", "policy_version_id", "rule_key",
                  "workload_class", "strategy", "requested_by_id")
        GpuRequest.objects.bulk_create(
            [GpuRequest(name=f"history-{i}", **{f: getattr(model, f) for f in fields}) for i in range(missing)],
            batch_size=500,
        )
    vacuum_requests()
    return GpuRequest.objects.count()


def vacuum_requests() -> None:
    """VACUUM (ANALYZE) the requests table, as autovacuum does a minute or so after a bulk load. Until then the
    table has no visibility map and stale statistics, so the list's count reads every heap page (about 40 times
    the work once vacuumed, at 2,000 rows) and whether autovacuum passes during a run decides its figures."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) intake_gpurequest")


def list_query_counts(stack: PortalStack, token: str) -> tuple[int, int]:
    """Queries of one GET /api/v1/requests/ (this process, against the benchmark database) and how many
    requests the caller could see."""
    django_setup(stack)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    client.get("/api/v1/requests/")  # warm: content types, policy caches
    with CaptureQueriesContext(connection) as queries:
        answer = client.get("/api/v1/requests/")
    assert answer.status_code == 200, answer.content[:300]
    return len(queries), answer.json()["count"]


def verdict(met: bool) -> str:
    return "OK" if met else "NOT met"


def run_workers(stack: PortalStack, token: str, args, workers: int, body_for) -> tuple[list[Phase], list[Phase]]:
    """gunicorn with `workers` workers; the three endpoints at `--clients`, in interleaved rounds, then each with as
    many clients as workers."""
    if stack.web is not None:
        stack.web.stop()
    stack.web_workers = workers
    stack.start_web()
    phases = [
        Phase("bare  GET /api/v1/me/", "GET", "/api/v1/me/"),
        Phase("create POST /api/v1/requests/", "POST", "/api/v1/requests/", body_for),
        Phase("list  GET /api/v1/requests/", "GET", "/api/v1/requests/"),
    ]
    # Interleaved rounds, so that whatever else the machine does weighs on every endpoint alike.
    for round_number in range(1, args.rounds + 1):
        for phase in phases:
            print(f"{workers} workers, round {round_number}/{args.rounds}: {phase.name}, {args.clients} clients, "
                  f"{args.seconds / args.rounds:g}s", flush=True)
            drive(stack, token, phase, args.clients, args.seconds / args.rounds, args.warmup)
    # The same endpoints with as many clients as web workers: the service time, without queueing.
    light = [Phase(f"{phase.name.split()[0]:<6} at {workers} clients", phase.method, phase.path, phase.body_for)
             for phase in phases]
    for phase in light:
        print(f"{workers} workers: {phase.name}, {args.light_seconds:g}s", flush=True)
        drive(stack, token, phase, workers, args.light_seconds, args.warmup)
    return phases, light


def report(args, workers: int, phases: list[Phase], light: list[Phase]) -> None:
    bare, create, listing = phases
    print()
    print(f"gunicorn {workers} sync workers; {args.clients} clients, {args.seconds:g}s each in {args.rounds} "
          f"interleaved rounds (each after {args.warmup:g}s warm-up)")
    print(f"{'endpoint':<32} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9} {'errors':>7}")
    for phase in phases + light:
        errors = sum(phase.errors.values())
        print(f"{phase.name:<32} {phase.throughput:>8.1f} {phase.percentile(0.5):>8.1f} "
              f"{phase.percentile(0.99):>8.1f} {len(phase.latencies):>9} {errors:>7}"
              + (f"  {phase.errors}" if errors else ""))
    print(f"goals with {workers} workers (baseline: the bare endpoint in this run, {bare.throughput:.1f} req/s at "
          f"{args.clients} clients):")
    for phase, target in ((create, CREATE_RATIO_TARGET), (listing, LIST_RATIO_TARGET)):
        ratio = phase.throughput / bare.throughput if bare.throughput else 0.0
        print(f"  {phase.name.split()[0]:<6} throughput {phase.throughput:.1f} req/s / bare {bare.throughput:.1f} = "
              f"{ratio:.2f} (target >= {target:.2f}): {verdict(ratio >= target)}")
    p99 = light[1].percentile(0.99)
    print(f"  create p99 at {workers} clients (one a worker: the service time) {p99:.1f} ms (bare "
          f"{light[0].percentile(0.99):.1f} ms; target < {P99_TARGET_MS:.0f} ms): {verdict(p99 < P99_TARGET_MS)}")
    if create.throughput:
        print(f"  create p99 at {args.clients} clients {create.percentile(0.99):.1f} ms: queueing, with "
              f"{args.clients} clients always waiting a request's latency is about {args.clients} / throughput "
              f"(Little's law), {args.clients / create.throughput * 1000:.0f} ms for create.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers: measured with 1, 2, ... N")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=12.0, help="per endpoint, over all rounds")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds over the three endpoints")
    parser.add_argument("--light-seconds", type=float, default=8.0,
                        help="per endpoint with only as many clients as web workers (service time)")
    parser.add_argument("--list-rows", type=int, default=2000,
                        help="requests visible to the list before the rounds (copies of a submitted one)")
    parser.add_argument("--private", action="store_true", help="start a PostgreSQL and a Redis of its own")
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers must be at least 1")

    workdir = Path(tempfile.mkdtemp(prefix="portal-bench-"))
    if args.private:
        redis, postgres = PrivateRedis(workdir), PrivatePostgres()
        redis.start()
        postgres.init()
        postgres.start()
    else:
        server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/x").rsplit("/", 1)[0]
        postgres = ExistingPostgres(server)
        redis = ExistingRedis(os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    stack = PortalStack(workdir, redis=redis, postgres=postgres, kube_url=None, dbname=DBNAME,
                        web_workers=1, access_log=False,
                        env={"PORTAL_API_RATE": "100000000/min", "LOG_LEVEL": "WARNING",
                             "CACHE_KEY_PREFIX": f"bench-{os.getpid()}"})
    results: dict[int, tuple[list[Phase], list[Phase]]] = {}
    try:
        print(f"setting up ({'private PostgreSQL and Redis' if args.private else postgres.url(DBNAME)}) ...",
              flush=True)
        stack.bootstrap()
        stack.start_web()
        alice = stack.tokens["alice"]
        for i in range(10):  # a little data for the first list query count
            stack.api("alice").post("/api/v1/requests/", {"team": "vision", "name": f"seed-{i}",
                                                          "answers": VALID_ANSWERS})
        queries_small, visible_small = list_query_counts(stack, alice)
        print(f"{seed_requests(stack, args.list_rows)} requests before the rounds", flush=True)

        run_id, serial = os.getpid(), itertools.count()  # unique request names (next() is atomic under the GIL)

        def body_for(client, n):
            return {"team": "vision", "name": f"b{run_id}-{next(serial)}", "answers": VALID_ANSWERS}

        for workers in range(1, args.workers + 1):
            results[workers] = run_workers(stack, alice, args, workers, body_for)
        from django.db import connections

        connections.close_all()
        queries_large, visible_large = list_query_counts(stack, alice)
    finally:
        stack.close()
        postgres.close()
        if args.private:
            redis.close()
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; load average before and after: {LOAD_BEFORE} / {load_average()}")
    for workers, (phases, light) in results.items():
        report(args, workers, phases, light)
    print()
    print(f"throughput by gunicorn workers ({args.clients} clients; ratio to the bare endpoint of the same run):")
    print(f"{'workers':>7} {'bare req/s':>11} {'create req/s':>13} {'ratio':>6} {'list req/s':>11} {'ratio':>6}")
    for workers, ((bare, create, listing), _) in results.items():
        base = bare.throughput or float("nan")
        print(f"{workers:>7} {bare.throughput:>11.1f} {create.throughput:>13.1f} {create.throughput / base:>6.2f} "
              f"{listing.throughput:>11.1f} {listing.throughput / base:>6.2f}")
    print(f"list queries {queries_small} with {visible_small} visible requests, {queries_large} with "
          f"{visible_large} (target: constant): {verdict(queries_small == queries_large)}")
    return 0


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


LOAD_BEFORE = load_average()


if __name__ == "__main__":
    sys.exit(main())

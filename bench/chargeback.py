#!/usr/bin/env python
"""Benchmark: the monthly chargeback CSV over 100,000 and 1,000,000 usage intervals.

Generates the intervals with set-based SQL (generate_series) into the real schema of a dedicated database
(`portal_bench`, created and dropped here), then, for the month grouped by team x strategy x GPU model, times

* the portal's code path: `selectors.report_query` -> `selectors.report_iter` (server-side cursor) ->
  `exporters.csv_lines`, written to a null sink (what `GET /api/v1/chargeback/report/?format=csv` streams), and
* the baseline: the same SELECT through `psql -c "COPY (...) TO STDOUT WITH CSV HEADER" > /dev/null`,

and prints both, their ratio, and the peak Python memory of the export (tracemalloc) and the process's peak
RSS at 100k and 1M intervals. Targets: ratio <= 1.5, peak memory growth < 20 MB from 100k to 1M.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/whatever python bench/chargeback.py [--runs 3]
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import time
import tracemalloc
from datetime import date
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _db import bench_url, drop_database, setup_django  # noqa: E402

START, END = date(2026, 10, 1), date(2026, 11, 1)
GROUP_BY = ["team", "strategy", "gpu_model"]

# (strategy, gpu_model, mig_profile, devices, equivalents num, den): a realistic mix
SHARES = [
    ("whole_gpu", "H100-80GB", "", 8, 8, 1), ("whole_gpu", "H100-80GB", "", 1, 1, 1),
    ("whole_gpu", "B200-180GB", "", 4, 4, 1), ("mig", "H200-141GB", "1g.18gb", 1, 1, 7),
    ("mig", "H200-141GB", "3g.71gb", 1, 3, 7), ("mig", "A100-80GB", "1g.10gb", 2, 2, 7),
    ("mig", "A30-24GB", "2g.12gb", 1, 1, 2), ("time_slicing", "L40S-48GB", "", 1, 1, 4),
]

GENERATE_SQL = """
INSERT INTO chargeback_usageinterval (
    pod_uid, namespace, pod_name, request_id, team_id, cost_center, cluster, strategy, gpu_model, mig_profile,
    devices, equivalents_num, equivalents_den, annotated_equivalents, flags, started_at, ended_at, end_source,
    category, is_demo, source, first_seen_at, ingested_at, updated_at)
SELECT 'bench-' || i, 'team-' || (i %% 40), 'pod-' || i, NULL, t.ids[1 + i %% 40], 'CC-' || (1000 + i %% 40),
    CASE WHEN i %% 3 = 0 THEN 'gpu-west' ELSE 'gpu-east' END,
    s.strategy[1 + i %% 8], s.model[1 + i %% 8], s.profile[1 + i %% 8], s.devices[1 + i %% 8],
    s.num[1 + i %% 8], s.den[1 + i %% 8], '', '{}', st, CASE WHEN i %% 100 = 0 THEN NULL ELSE st + d END,
    CASE WHEN i %% 100 = 0 THEN '' ELSE 'container' END, CASE WHEN i %% 50 = 7 THEN 'waste' ELSE 'usage' END,
    false, 'bench', st, now(), now()
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i
CROSS JOIN (SELECT array_agg(id ORDER BY id) AS ids FROM portal_team) t
CROSS JOIN (SELECT %(strategy)s::text[] AS strategy, %(model)s::text[] AS model, %(profile)s::text[] AS profile,
                   %(devices)s::int[] AS devices, %(num)s::bigint[] AS num, %(den)s::bigint[] AS den) s
CROSS JOIN LATERAL (SELECT
    timestamptz '2026-09-30 20:00:00+00' + ((i * 7919) %% (31 * 86400 + 8 * 3600)) * interval '1 second' AS st,
    (30 + (i * 104729) %% (36 * 3600)) * interval '1 second' AS d) x
"""


def generate(upto: int, already: int) -> float:
    from django.db import connection

    started = time.perf_counter()
    params = {"first": already + 1, "last": upto, "strategy": [s[0] for s in SHARES], "model": [s[1] for s in SHARES],
              "profile": [s[2] for s in SHARES], "devices": [s[3] for s in SHARES], "num": [s[4] for s in SHARES],
              "den": [s[5] for s in SHARES]}
    with connection.cursor() as cursor:
        cursor.execute(GENERATE_SQL, params)
        cursor.execute("VACUUM ANALYZE chargeback_usageinterval")
    return time.perf_counter() - started


class NullSink:
    def __init__(self):
        self.bytes = 0

    def write(self, chunk: str) -> None:
        self.bytes += len(chunk)


def export_csv() -> tuple[float, int, int]:
    """The portal's path: (seconds, bytes written, tracemalloc peak in bytes)."""
    from chargeback import selectors
    from chargeback.exporters import csv_lines

    sink = NullSink()
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    query = selectors.report_query(user=None, start=START, end=END, group_by=GROUP_BY)
    for chunk in csv_lines(selectors.report_iter(query), columns=query.columns, shown=query.csv_columns,
                           start=START, end=END):
        sink.write(chunk)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, sink.bytes, peak


def copy_sql() -> str:
    """The same SELECT, parameters inlined, as psql's COPY ... TO STDOUT."""
    from django.db import connection
    from psycopg import ClientCursor

    from chargeback import selectors

    query = selectors.report_query(user=None, start=START, end=END, group_by=GROUP_BY)
    connection.ensure_connection()
    with ClientCursor(connection.connection) as cursor:
        select = cursor.mogrify(query.sql, query.params)
    columns = ", ".join(query.csv_columns)
    return f"COPY (SELECT {columns} FROM ({select}) AS report) TO STDOUT WITH (FORMAT csv, HEADER)"


def export_psql(sql: str) -> float:
    started = time.perf_counter()
    with open("/dev/null", "wb") as devnull:
        subprocess.run(["psql", bench_url(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], stdout=devnull, check=True,
                       env={"PGTZ": "UTC", "PATH": "/usr/bin:/bin:/usr/local/bin"})
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per path and size (best is reported)")
    parser.add_argument("--keep", action="store_true", help="keep the portal_bench database afterwards")
    args = parser.parse_args()
    setup_django()
    from portal.models import Team

    try:
        Team.objects.bulk_create(Team(slug=f"team-{n:02d}", name=f"Team {n}", cost_center=f"CC-{1000 + n}")
                                 for n in range(40))
        from chargeback.models import RateCard

        RateCard.objects.bulk_create(
            [RateCard(gpu_model=m, strategy=s, price_per_equivalent_hour=p, currency="EUR", valid_from=date(2026, 1, 1))
             for s, m, p in [("whole_gpu", "H100-80GB", "2.90"), ("whole_gpu", "B200-180GB", "5.50"),
                             ("mig", "H200-141GB", "3.80"), ("mig", "A100-80GB", "1.90"),
                             ("time_slicing", "L40S-48GB", "1.20")]]
            + [RateCard(gpu_model="H200-141GB", strategy="mig", price_per_equivalent_hour="3.40", currency="EUR",
                        valid_from=date(2026, 10, 15))]  # a mid-month change: every H200 MIG interval is split
        )
        results, generated = {}, 0
        for size in (100_000, 1_000_000):
            seconds = generate(size, generated)
            generated = size
            print(f"generated {size:>9,} intervals ({seconds:.1f} s)", flush=True)
            sql = copy_sql()
            export_csv()  # warm-up: plans, caches
            export_psql(sql)
            portal = [export_csv() for _ in range(args.runs)]
            psql = [export_psql(sql) for _ in range(args.runs)]
            best_portal = min(portal, key=lambda r: r[0])
            results[size] = {
                "portal": best_portal[0], "psql": min(psql), "bytes": best_portal[1],
                "tracemalloc_peak": max(r[2] for r in portal),
                "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            }
        print()
        print(f"monthly CSV {START}..{END} grouped by {' x '.join(GROUP_BY)} (best of {args.runs})")
        print(f"{'intervals':>10} {'portal s':>9} {'psql COPY s':>12} {'ratio':>6} {'CSV bytes':>10} "
              f"{'py peak MB':>10} {'max RSS MB':>10}")
        for size, r in results.items():
            print(f"{size:>10,} {r['portal']:>9.3f} {r['psql']:>12.3f} {r['portal'] / r['psql']:>6.2f} {r['bytes']:>10,} "
                  f"{r['tracemalloc_peak'] / 2**20:>10.2f} {r['maxrss'] / 2**20:>10.1f}")
        small, large = results[100_000], results[1_000_000]
        ratio = large["portal"] / large["psql"]
        growth = max(large["tracemalloc_peak"] - small["tracemalloc_peak"], large["maxrss"] - small["maxrss"]) / 2**20
        print(f"\nratio at 1M: {ratio:.2f} (target <= 1.5): {'OK' if ratio <= 1.5 else 'MISSED'}")
        print(f"peak memory growth 100k -> 1M: {growth:.2f} MB (target < 20 MB): {'OK' if growth < 20 else 'MISSED'}")
    finally:
        if not args.keep:
            drop_database()


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Benchmark: the monthly chargeback report over 100,000 and 1,000,000 usage intervals, from rollups against the
raw query.

Generates the intervals with set-based SQL (generate_series) into the real schema of a dedicated database
(`portal_bench`, created and dropped here; the rollup triggers run as they do for ingestion), then, for the
month grouped by team x strategy x GPU model, times

* the portal's code path: `selectors.report_query` (rollups: whole days from `chargeback_usagerollup`, open
  intervals raw) -> `selectors.report_iter` (server-side cursor) -> `exporters.csv_lines`, to a null sink
  (what `GET /api/v1/chargeback/report/?format=csv` streams), and
* the baseline, in the same run: the same path with `source="raw"`, the reference query over raw intervals,

checks that both give the same rows (exact seconds and cost, to the cent), and prints both, their ratio and the
verdict. Targets at 1M intervals: report <= 0.3 s and >= 10x faster than the raw query, equal to the cent.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/whatever python bench/chargeback.py [--runs 3] [--sizes 20000,50000]
"""
from __future__ import annotations

import argparse
import time
import tracemalloc
from datetime import date
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _db import drop_database, setup_django  # noqa: E402

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


def export_csv(source: str, now) -> tuple[float, int, int]:
    """The CSV path from one source: (seconds, bytes written, tracemalloc peak in bytes)."""
    from chargeback import selectors
    from chargeback.exporters import csv_lines

    sink = NullSink()
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    query = selectors.report_query(user=None, start=START, end=END, group_by=GROUP_BY, now=now, source=source)
    for chunk in csv_lines(selectors.report_iter(query), columns=query.columns, shown=query.csv_columns,
                           start=START, end=END):
        sink.write(chunk)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, sink.bytes, peak


def same_rows(now) -> bool:
    """Both sources give the same rows: group columns, exact seconds and the cost to the cent."""
    from chargeback import selectors

    rows = {source: selectors.report_rows(user=None, start=START, end=END, group_by=GROUP_BY, now=now, source=source)
            for source in ("rollups", "raw")}
    return rows["rollups"] == rows["raw"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per path and size (best is reported)")
    parser.add_argument("--sizes", default="100000,1000000", help="interval counts, ascending (the last is judged)")
    parser.add_argument("--keep", action="store_true", help="keep the portal_bench database afterwards")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    setup_django()
    from django.utils import timezone

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
        now = timezone.now()
        results, generated = {}, 0
        for size in sizes:
            seconds = generate(size, generated)
            generated = size
            print(f"generated {size:>9,} intervals, rollups kept by the triggers ({seconds:.1f} s)", flush=True)
            export_csv("rollups", now)  # warm-up: plans, caches
            export_csv("raw", now)
            portal = [export_csv("rollups", now) for _ in range(args.runs)]
            raw = [export_csv("raw", now) for _ in range(args.runs)]
            best = min(portal, key=lambda r: r[0])
            results[size] = {"portal": best[0], "raw": min(r[0] for r in raw), "bytes": best[1],
                             "peak": max(r[2] for r in portal), "equal": same_rows(now)}
        print()
        print(f"monthly report {START}..{END} grouped by {' x '.join(GROUP_BY)}, as CSV (best of {args.runs})")
        print(f"{'intervals':>10} {'rollups s':>10} {'raw s':>8} {'speed-up':>9} {'equal':>6} {'CSV bytes':>10} "
              f"{'py peak MB':>10}")
        for size, r in results.items():
            print(f"{size:>10,} {r['portal']:>10.3f} {r['raw']:>8.3f} {r['raw'] / r['portal']:>8.1f}x "
                  f"{'yes' if r['equal'] else 'NO':>6} {r['bytes']:>10,} {r['peak'] / 2**20:>10.2f}")
        size, r = sizes[-1], results[sizes[-1]]
        note = "" if size >= 1_000_000 else f" (measured at {size:,}; the targets are for 1,000,000)"
        speedup = r["raw"] / r["portal"]
        print(f"\nreport time at {size:,}: {r['portal']:.3f} s (target <= 0.3 s): "
              f"{'OK' if r['portal'] <= 0.3 else 'NOT met'}{note}")
        print(f"speed-up over the raw query: {speedup:.1f}x (target >= 10x): {'OK' if speedup >= 10 else 'NOT met'}{note}")
        print(f"equal to the raw query, to the cent: {'OK' if r['equal'] else 'NOT met'}")
    finally:
        if not args.keep:
            drop_database()


if __name__ == "__main__":
    main()

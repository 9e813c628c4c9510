"""Benchmark of the manifest renderer: renders per second over the whole test matrix, on one core.

    python bench/render.py [--rounds 5] [--min-seconds 1.0]

Every renderable request of the matrix in tests/provisioning/manifests/matrix.py (all workload classes,
strategies, scheduling models, gang backends, Kubernetes versions and isolation variants; the combinations
the renderer refuses are left out) is rendered repeatedly. Beside it, as a baseline for "how much work is a
render", `json.dumps` of the same objects, per request. Validation is not part of the render figure; its own
rate is shown for reference (appliers may validate at apply time). Needs no Django settings and no database.
Target: >= 500 renders/s.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from provisioning.manifests import render, render_all, validate_objects  # noqa: E402
from tests.provisioning.manifests.matrix import cases  # noqa: E402

TARGET = 500.0


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        core = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
        return f"pinned to CPU {core}"
    return "not pinned (no sched_setaffinity)"


def rate(func, items, *, rounds: int, min_seconds: float) -> float:
    """Best-of-`rounds` items per second; each round repeats the whole list until `min_seconds` passed."""
    best = 0.0
    for _ in range(rounds):
        done, start = 0, time.perf_counter()
        while True:
            for item in items:
                func(item)
            done += len(items)
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = max(best, done / elapsed)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=1.0)
    args = parser.parse_args()
    pinning = pin_to_one_core()

    renderable = [c for c in cases() if c.error is None]
    requests = [(c.request, c.cluster) for c in renderable]
    with_team = [(c.team, c.request, c.cluster) for c in renderable]
    rendered = [render(r, cl) for r, cl in requests]
    rendered_all = [render_all(t, r, cl) for t, r, cl in with_team]
    versions = [c.cluster.kubernetes_version for c in renderable]
    objects = sum(len(o) for o in rendered)
    objects_all = sum(len(o) for o in rendered_all)
    for objs, version in zip(rendered_all, versions):  # warm the schema caches once, outside the timings
        validate_objects(objs, version)
    gc.collect()

    kw = {"rounds": args.rounds, "min_seconds": args.min_seconds}
    render_rate = rate(lambda item: render(*item), requests, **kw)
    dumps_rate = rate(json.dumps, rendered, **kw)
    render_all_rate = rate(lambda item: render_all(*item), with_team, **kw)
    dumps_all_rate = rate(json.dumps, rendered_all, **kw)
    validate_rate = rate(lambda item: validate_objects(*item), list(zip(rendered_all, versions)), **kw)

    print(f"Manifest renderer benchmark: Python {platform.python_version()}, {pinning}")
    print(
        f"{len(renderable)} renderable matrix requests; {objects} request objects "
        f"({objects_all} with team objects); best of {args.rounds} rounds of >= {args.min_seconds:g} s\n"
    )
    header = f"{'operation':<44}{'per second':>12}{'us each':>10}{'vs json.dumps':>15}"
    print(header)
    print("-" * len(header))
    rows = [
        ("render(request, cluster)", render_rate, dumps_rate),
        ("json.dumps(render output)  [baseline]", dumps_rate, dumps_rate),
        ("render_all(team, request, cluster)", render_all_rate, dumps_all_rate),
        ("json.dumps(render_all output)  [baseline]", dumps_all_rate, dumps_all_rate),
        ("validate_objects(render_all output)  [info]", validate_rate, dumps_all_rate),
    ]
    for label, per_second, baseline in rows:
        print(f"{label:<44}{per_second:>12,.0f}{1e6 / per_second:>10.1f}{per_second / baseline:>14.2f}x")
    verdict = "meets" if render_rate >= TARGET else "MISSES"
    print(
        f"\nrender: {render_rate:,.0f} renders/s {verdict} the target of {TARGET:,.0f}/s; "
        f"a render costs {dumps_rate / render_rate:.2f}x a json.dumps of its output."
    )
    return 0 if render_rate >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())

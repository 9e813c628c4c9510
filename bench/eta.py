"""The start estimates' error on the simulated cluster: requests that wait on the Kueue quota and on fragmentation,
then start when the work ahead of them ends (the scenario of kubesim/eta.py). Prints, per request that waited,
what held it, the estimate's basis, the first estimate, the actual start and the error, then the number of waits and
the median and 90th-percentile absolute error in minutes.

    python bench/eta.py [--step-seconds 30] [--verbose]
    python bench/eta.py --trace fleet [--nodes 1300] [--seed 14477] [--pending 500] [--rounds 3]

With `--trace fleet`, start estimates at fleet scale instead (bench/_eta_fleet.py): a trace shaped like
kubernetes-sigs/kueue#14477 on a simulated 1,300-node Kueue fleet, every estimate of the portal's estimator and of
queue depth divided by throughput compared with the actual start, then the wait explanations of --pending requests
queued on the simulated cluster refreshed at once; each goal printed with OK or NOT met.

Uses its own database (`portal_bench_eta` on the server of DATABASE_URL, or BENCH_DATABASE; dropped and created
afresh) and a fake Kubernetes API server on a free loopback port. The clock is simulated, so the figures do not
depend on the machine's load; the wall time printed at the end does.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from io import StringIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("BENCH_DATABASE", "portal_bench_eta")
from _db import drop_database, setup_django  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-seconds", type=float, default=30.0, help="simulated seconds per step (30)")
    parser.add_argument("--verbose", action="store_true", help="print each submission")
    parser.add_argument("--trace", choices=["scenario", "fleet"], default="scenario",
                        help="scenario: the two-request scenario of kubesim/eta.py; fleet: the fleet-scale trace")
    parser.add_argument("--nodes", type=int, default=1300, help="--trace fleet: GPU nodes of the fleet")
    parser.add_argument("--seed", type=int, default=14477, help="--trace fleet: the trace's random seed")
    parser.add_argument("--pending", type=int, default=500, help="--trace fleet: requests queued for the "
                        "explanations; 0 skips them")
    parser.add_argument("--rounds", type=int, default=3, help="--trace fleet: refreshes timed, best kept")
    args = parser.parse_args()
    os.environ.setdefault("PORTAL_OUTBOUND_ALLOWED_NETWORKS", "127.0.0.0/8")  # the fake API server is on loopback
    if args.trace == "fleet":
        sys.exit(fleet(args))
    setup_django()
    try:
        report(args)
    finally:
        drop_database()


def fleet(args) -> int:
    import _eta_fleet

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (the trace's clock is simulated: its "
          "figures do not depend on it)")
    ok = _eta_fleet.play(args)
    if args.pending:
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
        setup_django()
        try:
            ok &= _eta_fleet.explain(args)
        finally:
            drop_database()
    return 0 if ok else 1


def report(args) -> None:
    from django.core.management import call_command

    from kubesim import eta
    from kubesim.server import FakeKubeAPI
    from portal import celery_app
    from portal.models import Team
    from portal.services import team_upsert, user_upsert
    from provisioning.demo import CLUSTERS
    from provisioning.inventory import cluster_declare
    from provisioning.selectors import wait_estimate_error

    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # every call of the portal would be logged
    celery_app.conf.task_always_eager = True  # the apply after approval runs in this process
    for spec in CLUSTERS:
        spec = dict(spec)
        cluster_declare(pools=spec.pop("pools"), **spec)
    team_upsert(slug="vision", name="Computer Vision", cost_center="CC-1001")
    engineer, _ = user_upsert(username="alice", role="engineer", team_slugs=["vision"], password=None,
                              email="alice@example.com")
    platform, _ = user_upsert(username="pat", role="platform", team_slugs=[], password=None, email="pat@example.com")
    fake = FakeKubeAPI.start()
    started = time.perf_counter()
    try:
        eta.seed(fake)
        call_command("register_cluster", "gpu-east", "--server", fake.url, "--token", "bench", "--ca-cert-file",
                     fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue", stdout=StringIO())
        clock = eta.Clock(time.time())
        outcome = eta.run(fake, cluster_name="gpu-east", team=Team.objects.get(slug="vision"), engineer=engineer,
                          platform_user=platform, clock=clock, step_seconds=args.step_seconds,
                          progress=print if args.verbose else None)
    finally:
        fake.stop()
    for row in outcome.rows:
        print(f"{row['request']}: {row['status']}; held by {', '.join(row['reasons']) or 'nothing seen'} "
              f"({', '.join(row['blockers'])})")
        print(f"  unblock: {' / '.join(row['unblock'])}")
        print(f"  basis: {row['basis']}")
        print(f"  first estimate {row['first_estimate']:%H:%M:%S}, actual start {row['actual_start']:%H:%M:%S}, "
              f"error {row['error_minutes']:+.1f} min" if row["error_minutes"] is not None else
              f"  first estimate {row['first_estimate']}, actual start {row['actual_start']}: no error recorded")
    summary = outcome.summary()
    portal = wait_estimate_error()
    print(f"waits: {summary['waits']}, started: {summary['started']}; absolute error: median "
          f"{summary['median_abs_error_minutes']} min, p90 {summary['p90_abs_error_minutes']} min "
          f"(the portal's platform page: median {portal['median_abs_error_minutes']} min over {portal['requests']})")
    print(f"{outcome.steps} steps of {args.step_seconds:g} simulated seconds in {time.perf_counter() - started:.1f} s "
          f"wall time; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

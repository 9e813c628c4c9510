#!/usr/bin/env python
"""Benchmark: ingesting a 10,000-pod list, beside decoding the same JSON alone.

Builds a 10,000-pod list shaped like `GET /api/v1/pods` for the portal's pods (metadata with labels,
annotations and managed fields, spec, status with container states; a mix of running, finished and restarted
pods across whole-GPU, MIG and time-sliced requests) as one JSON document, then times

* the baseline: `json.loads` of that document alone, and
* ingestion: `json.loads` + `chargeback.services.usage_ingest` into the real schema of a dedicated database
  (`portal_bench_ingest`, created and dropped here),

and ingests the same list a second time, which must write 0 usage rows. Target: ingest <= 3x decode.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/whatever python bench/ingest.py [--pods 10000]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

os.environ.setdefault("BENCH_DATABASE", "portal_bench_ingest")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _db import drop_database, setup_django  # noqa: E402

NOW = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)


def build_requests():
    from chargeback.ingest import expected_equivalents
    from intake.models import GpuRequest, PolicyVersion
    from provisioning.demo import CLUSTERS
    from portal.services import team_upsert, user_upsert
    from gpu.catalogue import load_catalogue
    from provisioning.inventory import cluster_declare

    for spec in CLUSTERS:
        spec = dict(spec)
        cluster_declare(pools=spec.pop("pools"), **spec)
    user, _ = user_upsert(username="bench", role="platform")
    policy = PolicyVersion.objects.get(status="active")
    kinds = [("whole_gpu", "H100-80GB", None, "h100-train", 8), ("mig", "H200-141GB", "1g.18gb", "h200-mig", 1),
             ("mig", "A100-80GB", "1g.10gb", "a100-mig-small", 1), ("time_slicing", "L40S-48GB", None, "l40s-shared", 1)]
    catalogue = load_catalogue()
    requests = []
    for n in range(200):
        team, _ = team_upsert(slug=f"team-{n % 20:02d}", name=f"Team {n % 20}", cost_center=f"CC-{1000 + n % 20}")
        strategy, model, profile, pool, gpus = kinds[n % len(kinds)]
        decision = {"strategy": strategy, "gpu_model": model, "mig_profile": profile, "cluster": "gpu-east",
                    "node_pool": pool, "gpus_per_replica": gpus}
        gpu_request = GpuRequest.objects.create(
            team=team, name=f"workload-{n}", status="running", answers={}, decision=decision, policy_version=policy,
            workload_class="inference", strategy=strategy, requested_by=user)
        exact = expected_equivalents(strategy=strategy, devices=gpus, gpu_model=model, mig_profile=profile or "",
                                     catalogue=catalogue, time_slicing_replicas=4)
        requests.append((gpu_request, format(exact.numerator / exact.denominator, ".6f").rstrip("0").rstrip(".")))
    return requests


def build_pods(requests, count: int) -> bytes:
    from django.conf import settings

    from chargeback.synthetic import synthetic_pod

    items = []
    for n in range(count):
        gpu_request, equivalents = requests[n % len(requests)]
        d = gpu_request.decision
        start = NOW - timedelta(hours=1 + n % 500, seconds=n % 3600)
        finished = start + timedelta(minutes=5 + n % 300) if n % 3 else None
        if finished and finished > NOW:
            finished = None
        uid = str(uuid.UUID(int=n + 1))
        items.append(synthetic_pod(
            uid=uid, name=f"{gpu_request.name}-{uid[-5:]}", namespace=f"team-{gpu_request.team.slug}",
            label_domain=settings.PORTAL_LABEL_DOMAIN, request_id=gpu_request.pk, team=gpu_request.team.slug,
            cluster="gpu-east", strategy=d.strategy, gpu_model=d.gpu_model, mig_profile=d.mig_profile or "",
            devices=d.gpus_per_replica, equivalents=equivalents, started_at=start, finished_at=finished,
            restarted_at=start + timedelta(minutes=2) if n % 17 == 0 and not finished else None,
        ))
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "123456"},
                       "items": items}).encode()


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs (best is reported)")
    args = parser.parse_args()
    setup_django()
    try:
        from django.db import connection

        from chargeback.models import UsageInterval
        from chargeback.services import usage_ingest

        payload = build_pods(build_requests(), args.pods)
        decode = best(lambda: json.loads(payload), args.runs)

        first_times, result = [], None
        for _ in range(args.runs):
            with connection.cursor() as cursor:  # an empty table each run, as on a first collection
                cursor.execute("TRUNCATE chargeback_usageinterval, chargeback_usagecollection CASCADE")
            started = time.perf_counter()
            result = usage_ingest(cluster_name="gpu-east", pods=json.loads(payload)["items"], now=NOW, source="bench")
            first_times.append(time.perf_counter() - started)
        first = min(first_times)
        started = time.perf_counter()
        again = usage_ingest(cluster_name="gpu-east", pods=json.loads(payload)["items"], now=NOW + timedelta(seconds=1),
                             source="bench")
        second = time.perf_counter() - started

        print(f"{args.pods:,} pods, {len(payload) / 2**20:.1f} MiB of JSON (best of {args.runs})")
        print(f"{'':>28} {'seconds':>8} {'x decode':>9} {'rows written':>13}")
        print(f"{'json.loads alone':>28} {decode:>8.3f} {1:>9.2f} {'':>13}")
        print(f"{'decode + first ingest':>28} {first:>8.3f} {first / decode:>9.2f} {result.rows_written:>13,}")
        print(f"{'decode + second ingest':>28} {second:>8.3f} {second / decode:>9.2f} {again.rows_written:>13,}")
        print(f"\nintervals stored: {UsageInterval.objects.count():,} (open: "
              f"{UsageInterval.objects.filter(ended_at__isnull=True).count():,})")
        print(f"first ingest / decode: {first / decode:.2f} (target <= 3): {'OK' if first / decode <= 3 else 'MISSED'}")
        print(f"second ingest writes {again.rows_written} rows (target 0): {'OK' if again.rows_written == 0 else 'MISSED'}")
    finally:
        drop_database()


if __name__ == "__main__":
    main()

"""Inventory at fleet size: a sync of a cluster of 130 and of 1,300 GPU nodes (whole-GPU H100, H200 under MIG, B200
through the NVIDIA DRA driver with a ResourceSlice each, time-sliced L40S, MPS; pods and allocated claims holding
some of the GPUs: kubesim/fleet.py) served by the fake API server over HTTPS, and the capacity figures read from
what it recorded. Prints, per size, the read alone (`inventory_observe`: every LIST, paged; the baseline), the
whole sync (read + record), a second sync that changes nothing, and the capacity figures (the selector, and
`GET /api/v1/clusters/` as the platform team's client calls it), each with its time and database queries.

    python bench/inventory.py [--sizes 130 1300] [--rounds 3]

Uses its own database (`portal_bench_inventory` on the server of DATABASE_URL, or BENCH_DATABASE; dropped and
created afresh). Goals, each with its baseline from this run: the sync's queries, the second sync's and the
capacity figures' the same at every size; the record (the sync less the read) at most the read at the largest
size.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from io import StringIO
from pathlib import Path

os.environ.setdefault("BENCH_DATABASE", "portal_bench_inventory")
os.environ.setdefault("PORTAL_OUTBOUND_ALLOWED_NETWORKS", "127.0.0.0/8")  # the fake API server is on loopback
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _db import drop_database, setup_django  # noqa: E402


def timed(func, rounds: int = 1):
    """(best seconds, database statements of the last round, result)."""
    from django.db import connection

    best, count, result = None, 0, None
    for _ in range(rounds):
        counter = [0]

        def count_it(execute, sql, params, many, context):
            counter[0] += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count_it):
            start = time.perf_counter()
            result = func()
            seconds = time.perf_counter() - start
        best, count = seconds if best is None else min(best, seconds), counter[0]
    return best, count, result


def measure(nodes: int, rounds: int, token: str) -> dict:
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from kubesim import fleet
    from kubesim.server import FakeKubeAPI
    from provisioning.demo import CLUSTERS
    from provisioning.inventory import cluster_declare
    from provisioning.inventory_sync import inventory_observe, inventory_sync
    from provisioning.models import Cluster
    from provisioning.selectors import capacity_of, cluster_detail_list

    name = f"fleet-{nodes}"
    fake = FakeKubeAPI.start()
    try:
        objects = fleet.seed(fake, nodes)
        cluster_declare(**{**dict(CLUSTERS[0]), "name": name})
        call_command("register_cluster", name, "--server", fake.url, "--token", "bench", "--ca-cert-file",
                     fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
        cluster = Cluster.objects.get(name=name)
        read = timed(lambda: inventory_observe(cluster=cluster), rounds)
        first = timed(lambda: inventory_sync(cluster=cluster))
        assert first[2].status == "synced", first[2].message
        again = timed(lambda: inventory_sync(cluster=cluster), rounds)
        figures = timed(lambda: {c.name: capacity_of(c.nodes.all())
                                 for c in cluster_detail_list().filter(pk=cluster.pk)}, rounds)
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        served = timed(lambda: api.get("/api/v1/clusters/", {"name": name}), rounds)
        assert served[2].status_code == 200, served[2].content[:300]
    finally:
        fake.stop()
    return {"nodes": nodes, "objects": objects, "read": read, "first": first, "again": again, "figures": figures,
            "served": served, "gpu_nodes": first[2].nodes, "pools": first[2].pools,
            "whole_gpus": figures[2][name].get("whole_gpu", {})}


def verdict(what: str, baseline: str, measured: str, ok: bool) -> bool:
    print(f"  {what:<58} baseline {baseline:<22} measured {measured:<26} {'OK' if ok else 'NOT met'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[130, 1300])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:
        return report(args)
    finally:
        drop_database()


def report(args) -> int:
    from portal.services import token_issue, user_upsert

    platform_user, _ = user_upsert(username="bench-pat", role="platform", team_slugs=[], password=None)
    _, token = token_issue(user=platform_user, name="bench")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results = [measure(n, args.rounds, token) for n in args.sizes]
    for r in results:
        whole = r["whole_gpus"]
        print(f"\n{r['nodes']:,} GPU nodes ({r['objects']:,} objects on the fake API server; {r['gpu_nodes']:,} "
              f"recorded in {r['pools']} pools; whole GPUs {whole.get('devices_used', 0):,} used of "
              f"{whole.get('devices_total', 0):,})")
        base = r["read"][0]
        for key, what in (("read", "read alone (baseline)"), ("first", "first sync"), ("again", "sync, no change"),
                          ("figures", "capacity figures"), ("served", "GET /api/v1/clusters/")):
            seconds, queries, _ = r[key]
            print(f"  {what:<24} {seconds:8.3f} s  ({seconds / base:5.2f} x the read)  {queries:4d} queries  "
                  f"{seconds / r['nodes'] * 1000:6.2f} ms a node")
    print(f"\ngoals (baselines from this run; load average {os.getloadavg()[0]:.1f}):")
    ok = True
    for key, what in (("first", "first sync"), ("again", "sync, no change"), ("figures", "capacity figures"),
                      ("served", "GET /api/v1/clusters/")):
        counts = [r[key][1] for r in results]
        ok &= verdict(f"{what}: queries the same at " + " and ".join(f"{r['nodes']:,}" for r in results) + " nodes",
                      f"{counts[0]} queries", f"{counts}", len(set(counts)) == 1)
    largest = results[-1]
    read, again = largest["read"][0], largest["again"][0]
    ok &= verdict(f"record at {largest['nodes']:,} nodes (sync less read) <= 1 x the read", f"read {read:.3f} s",
                  f"{again - read:.3f} s = {(again - read) / read:.2f} x", again - read <= read)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

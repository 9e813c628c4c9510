"""Benchmark of status reconciliation as a worker runs it: the reconciler, in a process of its own, LISTs the pods
of a cluster (a PodList served over HTTPS in pages of 500, as kube-apiserver serves one) and reconciles them; the
benchmark measures its time, its database queries and its peak resident memory, beside the time to decode the same
PodList whole with json.loads (what a client that lists in one go does anyway), measured in a bare process.

    python bench/reconcile.py [--sizes 5000:5 10000:10 50000:10 200000:10] [--rounds 3] [--workers 1 2]
                              [--clusters 4] [--scale-pods 10000]

Uses its own database (`portal_bench_reconcile` on the server of DATABASE_URL, dropped and created afresh) and
Redis (BENCH_REDIS_URL, else REDIS_URL, for the per-cluster lock). Each size is PODS:PODS_PER_REQUEST: the
requests (half training gangs, half inference, all `provisioning`, cloned from one request that went through the
real services) and realistic pods rendered from their real workloads, `managedFields` included: 60 % of the
requests fully running, 10 % running with an OOM-killed restart, 10 % Pending (unschedulable), 10 % partial
(training: a stalled gang; inference: not enough replicas ready), 10 % done (training: succeeded; inference:
running). The pods are written to a file and served from it (bench/_kube_fixture.py) by this process; the
reconciler is another process (`--child`), spawned fresh, so its resident set is its own.

Measured, per size, in the reconciler's process:
  first    the first run (`cluster_status_reconcile`: LIST in pages + the cycle): most requests change status,
           stalls open, every event is new
  resync   the same run again (LIST + cycle, nothing changes; best of --rounds): what a worker does every
           PORTAL_RECONCILE_RELIST_SECONDS and after a failed watch
  steady   the cycle alone over the facts the LIST left (best of --rounds): what the run every minute reconciles
           once its watch has resumed and caught up (the catch-up is the server's second, not the worker's)
  peak     the process's peak resident set (VmHWM), and what it was after Django's set-up and after the first run
and, in a bare process, the decode of the whole PodList (best of --rounds; once at 200,000 pods).

With --workers, the first run over --clusters clusters (--scale-pods pods in all, 10 per request) is made by 1,
2, ... worker processes at once, each reconciling its share of the clusters from their own PodList servers,
every run on a fresh copy of the same database: pods reconciled per second and the events recorded, which must
not depend on the number of workers. Stalled-gang notices go to an in-memory broker (their delivery is a worker's
task, not the cycle's).

Goals, each printed with its baseline from the same run: the reconciler's peak at the largest size within 300 MB
of its peak at the smallest; the first run <= 1 x decode at 50,000 and 200,000 pods (and <= 1.5 x at 10,000);
the steady cycle at 10,000 pods <= 2 s and at 50,000 <= 1 x decode; database queries of the first, resync and
steady runs the same at 5,000 and 10,000 pods (the same 1,000 requests); two workers >= 1.8 x the throughput of
one.
"""
from __future__ import annotations

import argparse
import atexit
import base64
import copy
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

DB_NAME = "portal_bench_reconcile"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=20)
MEMORY_GOAL_MB = 300  # peak at the largest size - peak at the smallest
FIRST_GOAL = 1.0  # x decode, at 50,000 pods and more
FIRST_GOAL_10K = 1.5  # x decode, at 10,000 pods
STEADY_SECONDS_10K = 2.0
STEADY_GOAL = 1.0  # x decode, at 50,000 pods
SCALE_OUT_GOAL = 1.8  # two workers against one


def bench_database_url(name: str = DB_NAME) -> str:
    base = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpu_portal"))
    return urlunsplit(base._replace(path=f"/{name}"))


def admin_url() -> str:
    return urlunsplit(urlsplit(bench_database_url())._replace(path="/postgres"))


def recreate_database(name: str = DB_NAME, template: str | None = None) -> None:
    import psycopg

    with psycopg.connect(admin_url(), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url(), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def environment(database: str, scratch: str, *, eager: bool) -> dict[str, str]:
    """The settings of every process of the benchmark (the children's through their environment). `eager`: this is
    the fixture's process, which applies the seed requests in-process, in development mode; the reconcilers run as
    a worker runs in production (DEBUG off: no query log) and queue their tasks to an in-memory broker. One secret
    key and one credential key for all, so the reconcilers read the cluster tokens the fixture stored."""
    return {
        "CELERY_TASK_ALWAYS_EAGER": "true" if eager else "false",
        "DEBUG": "true" if eager else "false",
        "SECRET_KEY": "bench-reconcile-not-a-secret",
        "PORTAL_CREDENTIAL_KEYS": os.environ.get("PORTAL_CREDENTIAL_KEYS") or base64.urlsafe_b64encode(
            os.urandom(32)).decode(),
        "DATABASE_URL": bench_database_url(database),
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "CELERY_BROKER_URL": "memory://localhost/",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL") or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14"),
        "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
        "LOG_LEVEL": "WARNING",
        "PORTAL_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8",  # the PodList servers are on loopback
        # The seed requests are really applied (gitops applier, eager task): into a throw-away repository.
        "PORTAL_DATA_DIR": scratch,
    }  # fmt: skip


def setup_django(*, migrate: bool, database: str = DB_NAME, scratch: str | None = None) -> None:
    """Django on the benchmark's database; `migrate`: this is the fixture's process (creates and migrates it)."""
    if migrate:
        recreate_database()
    if scratch is None:
        scratch = tempfile.mkdtemp(prefix="bench-reconcile-")
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    os.environ.update(environment(database, scratch, eager=migrate))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def peak_mb() -> float:
    """This process's peak resident set since it started (VmHWM). Not ru_maxrss: Linux carries that over an exec
    from the process forked, so a child would report this (larger) process's resident set."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def managed_fields(pod: dict) -> list[dict]:
    """What an API server stores beside each pod: one entry per writer (real LIST answers carry them)."""
    meta = pod["metadata"]
    metadata_fields = {
        "f:labels": {f"f:{k}": {} for k in meta["labels"]},
        "f:annotations": {f"f:{k}": {} for k in meta["annotations"]},
        "f:ownerReferences": {},
    }
    status_fields = {f"f:{k}": {} for k in ("conditions", "containerStatuses", "hostIP", "phase", "podIP", "startTime")}
    common = {"operation": "Update", "apiVersion": "v1", "time": meta["creationTimestamp"], "fieldsType": "FieldsV1"}
    return [
        {"manager": "kube-controller-manager", **common,
         "fieldsV1": {"f:metadata": metadata_fields, "f:spec": {f"f:{k}": {} for k in pod["spec"]}}},
        {"manager": "kubelet", **common, "subresource": "status", "fieldsV1": {"f:status": status_fields}},
    ]  # fmt: skip


def pods_for(gpu_request, workload: dict, kind: str, per_request: int) -> list[dict]:
    from tests.provisioning.reconcile import pods as k8s

    training = gpu_request.workload_class == "training"
    made = []
    for index in range(per_request):
        pod = k8s.pod_for(workload, index=index, created=T0)
        node = f"gpu-h100-{(gpu_request.pk * 7 + index) % 512:03d}"
        if kind == "pending" or (kind == "partial" and index >= per_request - 3):
            patch = k8s.unschedulable(pod, T0)
        elif kind == "done" and training:
            patch = k8s.terminated(pod, node, T0 + timedelta(minutes=1), T0 + timedelta(minutes=15))
        elif kind == "oom" and index == 0:
            patch = k8s.oom_killed_then_running(pod, node, T0 + timedelta(minutes=1), T0 + timedelta(minutes=3))
        else:
            patch = k8s.running(pod, node, T0 + timedelta(minutes=1))
        pod = k8s.moved(pod, patch)
        pod["metadata"]["resourceVersion"] = str(100_000 + gpu_request.pk * 100 + index)
        pod["metadata"]["managedFields"] = managed_fields(pod)
        made.append(pod)
    return made


KINDS = ["running"] * 6 + ["oom", "pending", "partial", "done"]


def make_requests(count: int, per_request: int, sink, *, cluster_name: str = "gpu-east", fresh: bool = True) -> int:
    """`count` provisioning requests on `cluster_name` (half training gangs, half inference), their pods written to
    `sink` (`.add(pod)`) one at a time; `fresh`: the requests made before are deleted first. Returns the pods."""
    from django.contrib.auth import get_user_model

    from intake.models import GpuRequest
    from intake.services import request_transition
    from workflows.services import request_approve, request_submit
    from portal.models import Team
    from provisioning.models import Cluster, NodePool, ProvisioningJob
    from provisioning.selectors import request_manifests
    from tests.provisioning.reconcile import pods as k8s

    if fresh:
        GpuRequest.objects.all().delete()
    team = Team.objects.get(slug="bench")
    engineer = get_user_model().objects.get(username="bench-eve")
    approver = get_user_model().objects.get(username="bench-pat")
    cluster = Cluster.objects.get(name=cluster_name)
    # A fleet big enough for the benchmark's gangs, so approval's capacity check lets them through.
    NodePool.objects.filter(cluster__name__in=(cluster_name, "gpu-east"), name="h100-train").update(
        node_count=max(16, per_request * 2))
    common = {"tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60, "gpus_per_replica": 8,
              "replicas": per_request, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
    serving = {"tenancy": "multi_tenant", "latency": "latency_sensitive", "gpu_memory_gb": 16, "gpus_per_replica": 1,
               "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
    templates = []
    for workload_class, extra in (("training", {}), ("inference", serving)):
        first = request_submit(user=engineer, team=team, name=f"seed-{cluster_name}-{workload_class}",
                               raw_answers={**common, "workload_class": workload_class, **extra})
        if first.status == "pending_approval":
            request_approve(user=approver, request_id=first.pk)  # applied at once: the task runs eagerly
        first.refresh_from_db()
        if first.status != "provisioning":
            first = request_transition(request_id=first.pk, to_status="provisioning", actor=None)
        templates.append(first)
    fields = ["answers", "defaulted_answers", "decision", "policy_version_id", "rule_key", "workload_class",
              "strategy"]
    clones = [GpuRequest(team=team, name=f"bench-{cluster_name}-{i:04d}", requested_by=engineer, status="provisioning",
                         status_changed_at=T0, **{f: getattr(templates[i % 2], f) for f in fields})
              for i in range(count - len(templates))]
    clones = GpuRequest.objects.bulk_create(clones, batch_size=500)
    GpuRequest.objects.filter(pk__in=[t.pk for t in templates]).update(status_changed_at=T0)
    # The seeds were applied to the cluster their decision chose: their apply job now names this one.
    ProvisioningJob.objects.filter(request__in=templates, kind="apply").update(cluster=cluster)
    requests = list(GpuRequest.objects.filter(pk__in=[r.pk for r in [*templates, *clones]]).select_related(
        "team").order_by("pk"))
    ProvisioningJob.objects.bulk_create(
        [ProvisioningJob(request=r, cluster=cluster, kind="apply", status="succeeded") for r in requests],
        ignore_conflicts=True, batch_size=500)
    workloads = {t.workload_class: k8s.workload_of(request_manifests(gpu_request=t)) for t in templates}
    made = 0
    for n, gpu_request in enumerate(requests):
        workload = copy.deepcopy(workloads[gpu_request.workload_class])
        # The request's own names and labels, as its render would give them.
        template = templates[0 if gpu_request.workload_class == "training" else 1]
        name = workload["metadata"]["name"].replace(f"-r{template.pk}", f"-r{gpu_request.pk}")
        workload["metadata"].update(name=name, uid=f"00000000-0000-4000-8000-{gpu_request.pk:012d}")
        workload["spec"]["template"]["metadata"]["labels"]["gpu-portal.io/request-id"] = str(gpu_request.pk)
        for pod in pods_for(gpu_request, workload, KINDS[n % len(KINDS)], per_request):
            pod.pop("apiVersion"), pod.pop("kind")  # as API servers list built-in kinds
            sink.add(pod)
            made += 1
    return made


# --- the reconciler's side (child processes) ---------------------------------------------------------------------


_STATEMENTS = [0]


def _count_statements() -> None:
    """Count every statement sent to the database, from any thread (the cycle writes from a thread of its own)."""
    import threading

    from django.db.backends import utils

    lock, original = threading.Lock(), utils.CursorWrapper._execute_with_wrappers

    def counted(self, sql, params, many, executor):
        with lock:
            _STATEMENTS[0] += 1
        return original(self, sql, params, many, executor)

    utils.CursorWrapper._execute_with_wrappers = counted


def _counted(func):
    """Run `func`, returning (seconds, database statements sent, its result)."""
    before = _STATEMENTS[0]
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, _STATEMENTS[0] - before, result


def child_reconcile(database: str, cluster_id: int, rounds: int) -> dict:
    """One reconciler: the first run, the steady run (best of `rounds`), the cycle from the facts kept."""
    setup_django(migrate=False, database=database, scratch=tempfile.mkdtemp(prefix="bench-reconcile-child-"))
    _count_statements()
    from provisioning.models import Cluster
    from provisioning.reconcile import cluster_status_reconcile, status_reconcile_facts, watch

    before = peak_mb()

    def run():
        outcome = cluster_status_reconcile(cluster_id=cluster_id, watch_seconds=0, clock=lambda: NOW)
        assert outcome.status == "ok", outcome.summary()
        return outcome

    if os.environ.get("BENCH_PROFILE"):  # where the first and steady runs go, to a file for pstats
        import cProfile

        cProfile.runctx(os.environ.get("BENCH_PROFILE_CODE", "run(); run()"), globals(), {"run": run}, os.environ["BENCH_PROFILE"])
        return {}
    seconds, queries, first = _counted(run)
    result = {"before_mb": before, "first": {"seconds": seconds, "queries": queries, "events": first.events,
                                             "transitions": first.transitions, "pods": first.pods}}
    after_first = peak_mb()
    resync = [_counted(run) for _ in range(rounds)]
    best = min(resync, key=lambda m: m[0])
    result["resync"] = {"seconds": best[0], "queries": best[1], "events": best[2].events,
                        "transitions": best[2].transitions}
    cluster, store = Cluster.objects.get(pk=cluster_id), watch._POD_STORES[cluster_id]
    steady = [_counted(lambda: status_reconcile_facts(cluster=cluster, facts=store, now=NOW)) for _ in range(rounds)]
    best = min(steady, key=lambda m: m[0])
    result["steady"] = {"seconds": best[0], "queries": best[1], "events": best[2].events,
                        "transitions": len(best[2].transitions)}
    result.update(after_first_mb=after_first, peak_mb=peak_mb())
    return result


def child_decode(path: str, rounds: int) -> dict:
    """The baseline, in a bare process: json.loads of the whole PodList, best of `rounds`."""
    body = Path(path).read_bytes()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        decoded = json.loads(body)
        times.append(time.perf_counter() - start)
        del decoded
    return {"seconds": min(times), "peak_mb": peak_mb()}


def child_worker(database: str, cluster_ids: list[int]) -> dict:
    """One of several worker processes: set up, say ready, wait for the go, reconcile its clusters in turn."""
    setup_django(migrate=False, database=database, scratch=tempfile.mkdtemp(prefix="bench-reconcile-worker-"))
    from provisioning.reconcile import cluster_status_reconcile

    print("ready", flush=True)
    sys.stdin.readline()
    start, events, pods = time.perf_counter(), 0, 0
    for cluster_id in cluster_ids:
        outcome = cluster_status_reconcile(cluster_id=cluster_id, watch_seconds=0, clock=lambda: NOW)
        assert outcome.status == "ok", outcome.summary()
        events, pods = events + outcome.events, pods + outcome.pods
    return {"seconds": time.perf_counter() - start, "events": events, "pods": pods, "peak_mb": peak_mb()}


def spawn(*args: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--child", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, **options)


def child_result(process: subprocess.Popen) -> dict:
    out, _ = process.communicate(timeout=7200)
    if process.returncode:
        raise SystemExit(f"a child process failed (exit {process.returncode}); its output:\n{out}")
    return json.loads(out.strip().splitlines()[-1])


# --- the fixture's side (this process) ---------------------------------------------------------------------------


def declare_bench_world() -> None:
    from portal.models import Team
    from portal.services import user_upsert
    from provisioning.demo import CLUSTERS
    from provisioning.inventory import cluster_declare

    for spec in CLUSTERS:
        spec = dict(spec)
        cluster_declare(pools=spec.pop("pools"), **spec)
    Team.objects.create(slug="bench", name="Bench", cost_center="CC-0", notification_email="bench@example.com")
    user_upsert(username="bench-eve", role="engineer", team_slugs=["bench"], password="bench-password-1")
    user_upsert(username="bench-pat", role="platform", team_slugs=[], password="bench-password-1")


def fixture(count: int, per_request: int, scratch: Path, ca, *, cluster_name: str, fresh: bool = True):
    """The requests in the database and their pods served from a file; the cluster registered at that server."""
    from io import StringIO

    from _kube_fixture import TOKEN, PodListFile, serve
    from django.core.management import call_command

    from provisioning.models import Cluster

    pods = PodListFile(scratch / f"{cluster_name}-{count}x{per_request}.json")
    made = make_requests(count, per_request, pods, cluster_name=cluster_name, fresh=fresh)
    pods.close()
    url, server = serve(pods, ca)
    call_command("register_cluster", cluster_name, "--server", url, "--token", TOKEN, "--ca-cert-file", ca.ca_file,
                 stdout=StringIO())
    return Cluster.objects.get(name=cluster_name), pods, server, made


def declare_like_east(name: str) -> None:
    """A cluster declared as gpu-east is, but left out of placement (disabled): the seed requests are applied where
    their decision says (gpu-east, a GitOps repository here), and their apply jobs then name this one, which is
    registered at a PodList server."""
    from provisioning.demo import CLUSTERS
    from provisioning.inventory import cluster_declare

    east = next(dict(spec) for spec in CLUSTERS if spec["name"] == "gpu-east")
    cluster_declare(**{**east, "name": name, "enabled": False})


def size(args, count: int, per_request: int, scratch: Path, ca) -> dict:
    from django.db import connections

    name = f"bench-{count * per_request}"
    declare_like_east(name)
    cluster, pods, server, made = fixture(count, per_request, scratch, ca, cluster_name=name)
    connections.close_all()
    decode = child_result(spawn("decode", str(pods.path), str(1 if made >= 100_000 else args.rounds)))
    reconciled = child_result(spawn("reconcile", DB_NAME, str(cluster.pk), str(args.rounds)))
    server.shutdown()
    result = {"pods": made, "requests": count, "bytes": pods.size, "decode": decode, "lists": server.lists,
              **reconciled}
    pods.path.unlink()
    return result


def scale_out(args, scratch: Path, ca) -> list[dict]:
    from django.db import connections

    clusters, servers = [], []
    for n in range(args.clusters):
        name = f"bench-worker-{n + 1}"
        declare_like_east(name)
        cluster, _, server, _ = fixture(max(2, args.scale_pods // 10 // args.clusters), 10, scratch, ca,
                                        cluster_name=name, fresh=n == 0)
        clusters.append(cluster.pk)
        servers.append(server)
    connections.close_all()
    runs = []
    for count in args.workers:
        copy_name = f"{DB_NAME}_w{count}"
        recreate_database(copy_name, template=DB_NAME)
        workers = [spawn("worker", copy_name, ",".join(map(str, clusters[i::count])), stdin=subprocess.PIPE)
                   for i in range(count)]
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for worker in workers:
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outcomes = [child_result(worker) for worker in workers]
        wall = time.perf_counter() - start
        drop_database(copy_name)
        runs.append({"workers": count, "wall": wall, "events": sum(o["events"] for o in outcomes),
                     "pods": sum(o["pods"] for o in outcomes), "peak_mb": max(o["peak_mb"] for o in outcomes)})
    for server in servers:
        server.shutdown()
    return runs


# --- report ------------------------------------------------------------------------------------------------------


def verdict(what: str, baseline: str, measured: str, ok: bool) -> bool:
    print(f"  {what:<55} baseline {baseline:<24} measured {measured:<24} {'OK' if ok else 'NOT met'}")
    return ok


def report(results: list[dict], runs: list[dict]) -> bool:
    for r in results:
        base = r["decode"]["seconds"]
        print(f"\n{r['pods']:,} pods of {r['requests']:,} requests, PodList {r['bytes'] / 1e6:,.1f} MB, LISTed in "
              f"pages of 500 ({r['lists']:,} page requests in all)")
        print(f"  {'decode (baseline)':<20} {base:8.3f} s   (bare process, peak {r['decode']['peak_mb']:,.0f} MB)")
        for key, what in (("first", "first run"), ("resync", "resync run"), ("steady", "steady cycle")):
            m = r[key]
            print(f"  {what:<20} {m['seconds']:8.3f} s   ({m['seconds'] / base:4.2f} x decode)  {m['queries']:5d} "
                  f"queries  {m.get('transitions', 0):5d} status changes  {m['events']:7d} new events")
        print(f"  reconciler peak     {r['peak_mb']:8,.0f} MB  (after Django set-up {r['before_mb']:,.0f} MB, after "
              f"the first run {r['after_first_mb']:,.0f} MB)")
    if runs:
        print(f"\nfirst run over {len(runs[0]) and runs[0]['pods']:,} pods on several clusters, worker processes "
              "at once:")
        for run in runs:
            print(f"  {run['workers']} worker(s): {run['wall']:7.3f} s wall, {run['pods'] / run['wall']:8,.0f} "
                  f"pods/s, {run['events']} new events, peak {run['peak_mb']:,.0f} MB a worker")

    print("\ngoals (baselines from this run):")
    ok = True
    by_pods = {r["pods"]: r for r in results}
    smallest, largest = results[0], results[-1]
    if len(results) > 1:
        grown = largest["peak_mb"] - smallest["peak_mb"]
        ok &= verdict(f"reconciler peak at {largest['pods']:,} pods within {MEMORY_GOAL_MB} MB of "
                      f"{smallest['pods']:,}", f"{smallest['peak_mb']:,.0f} MB", f"{largest['peak_mb']:,.0f} MB "
                      f"(+{grown:,.0f} MB)", grown <= MEMORY_GOAL_MB)
    for r in results:
        base, first = r["decode"]["seconds"], r["first"]["seconds"]
        goal = FIRST_GOAL if r["pods"] >= 50_000 else FIRST_GOAL_10K if r["pods"] == 10_000 else None
        if goal:
            ok &= verdict(f"first run at {r['pods']:,} pods <= {goal} x decode", f"decode {base:.3f} s",
                          f"{first:.3f} s = {first / base:.2f} x", first <= goal * base)
    if 10_000 in by_pods:
        steady = by_pods[10_000]["steady"]["seconds"]
        ok &= verdict(f"steady cycle at 10,000 pods <= {STEADY_SECONDS_10K} s", f"{STEADY_SECONDS_10K} s",
                      f"{steady:.3f} s", steady <= STEADY_SECONDS_10K)
    if 50_000 in by_pods:
        base, steady = by_pods[50_000]["decode"]["seconds"], by_pods[50_000]["steady"]["seconds"]
        ok &= verdict(f"steady cycle at 50,000 pods <= {STEADY_GOAL} x decode", f"decode {base:.3f} s",
                      f"{steady:.3f} s = {steady / base:.2f} x", steady <= STEADY_GOAL * base)
    same_requests = [r for r in results if r["requests"] == 1000]
    if len(same_requests) > 1:
        for key in ("first", "resync", "steady"):
            counts = sorted({r[key]["queries"] for r in same_requests})
            ok &= verdict(f"{key} run queries the same at " + " and ".join(f"{r['pods']:,}" for r in same_requests)
                          + " pods", f"{same_requests[0][key]['queries']} queries", f"{counts}", len(counts) == 1)
    if len(runs) > 1:
        one, two = runs[0], runs[1]
        speed = (two["pods"] / two["wall"]) / (one["pods"] / one["wall"])
        ok &= verdict(f"{two['workers']} workers >= {SCALE_OUT_GOAL} x the throughput of {one['workers']}",
                      f"{one['pods'] / one['wall']:,.0f} pods/s", f"{two['pods'] / two['wall']:,.0f} pods/s = "
                      f"{speed:.2f} x", speed >= SCALE_OUT_GOAL)
        events = sorted({run["events"] for run in runs})
        ok &= verdict("the same new events for every worker count", f"{one['events']} (1 worker)", f"{events}",
                      len(events) == 1)
    return ok


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "reconcile":
            result = child_reconcile(rest[0], int(rest[1]), int(rest[2]))
        elif kind == "decode":
            result = child_decode(rest[0], int(rest[1]))
        else:
            result = child_worker(rest[0], [int(i) for i in rest[1].split(",") if i])
        print(json.dumps(result), flush=True)
        return 0

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["5000:5", "10000:10", "50000:10", "200000:10"],
                        help="PODS:PODS_PER_REQUEST each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2],
                        help="worker counts for the scale-out measurement; none: skip")
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--scale-pods", type=int, default=10_000)
    args = parser.parse_args()

    from kubesim.tls import test_ca

    setup_django(migrate=True)
    declare_bench_world()
    print(f"python {platform.python_version()} on {platform.machine()}, database {DB_NAME}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    scratch = Path(tempfile.mkdtemp(prefix="bench-reconcile-pods-"))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    ca = test_ca()
    results = []
    for spec in args.sizes:
        pods, per_request = (int(part) for part in spec.split(":"))
        results.append(size(args, pods // per_request, per_request, scratch, ca))
        print(f"  ... {results[-1]['pods']:,} pods measured, load average {os.getloadavg()[0]:.1f}", flush=True)
    runs = scale_out(args, scratch, ca) if args.workers else []
    ok = report(results, runs)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

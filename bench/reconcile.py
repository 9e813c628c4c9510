"""Benchmark of status reconciliation: one cycle over the pods of 1,000 requests, its time and database queries,
beside the time to decode the same pod list from JSON (what the API client does with a LIST answer anyway).

    python bench/reconcile.py [--requests 1000] [--pods-per-request 10 5] [--rounds 5] [--pods 50000]
                              [--workers 1 2] [--clusters 4]

Uses its own database (`portal_bench_reconcile` on the server of DATABASE_URL, dropped and created afresh) and
migrates it. For each pods-per-request figure it creates the requests (half training gangs, half inference, all
`provisioning` on gpu-east, cloned from one request that went through the real services) and realistic pods
rendered from their real workloads: 60 % of the requests fully running, 10 % running with an OOM-killed restart,
10 % Pending (unschedulable), 10 % partial (training: a stalled gang; inference: not enough replicas ready),
10 % done (training: succeeded; inference: running).

Measured, per configuration:
  decode   json.loads of the PodList (the baseline)
  first    the first cycle: most requests change status (~85 % of them), stalls open, all events are new
  steady   a cycle in which nothing changes (best of --rounds): the one that runs every minute
  churn    a cycle in which 1 % of the requests change status

With --pods, the steady cycle is also measured at that many pods (10 per request). With --workers, the first
cycle over --clusters clusters (--requests / --clusters requests each) is run by that many worker processes at
once, each reconciling its share of the clusters, every run on a fresh copy of the same database: the pods
reconciled per second, and the events, which must not depend on the number of workers.

Stalled-gang notices are queued to an in-memory broker during the measured cycles: their delivery is a worker's
task, not the cycle's (until 2026-12-01 they were delivered in-process, inside the first cycle's time).

Targets, each printed with its baseline from the same run: the first cycle at 10,000 pods <= 1.5 x decode, the
steady cycle at 10,000 pods <= 2 s and at --pods <= 1 x decode, and a query count that does not grow with the
number of pods (compare the configurations).
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import copy
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DB_NAME = "portal_bench_reconcile"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=20)
TARGET_SECONDS = 2.0
FIRST_TARGET = 1.5  # x decode, at 10,000 pods
STEADY_TARGET = 1.0  # x decode, at --pods


def bench_database_url() -> str:
    base = urlsplit(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpu_portal"))
    return urlunsplit(base._replace(path=f"/{DB_NAME}"))


def recreate_database(url: str) -> None:
    import psycopg

    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{DB_NAME}"')


def setup_django() -> None:
    url = bench_database_url()
    recreate_database(url)
    scratch = tempfile.mkdtemp(prefix="bench-reconcile-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    os.environ.update({
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DEBUG": os.environ.get("DEBUG", "true"),  # a local benchmark: development mode, explicitly
        "CELERY_TASK_ALWAYS_EAGER": "true",  # the seed requests are applied in-process (measure() turns this off)
        "CELERY_BROKER_URL": "memory://localhost/",
        "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
        "LOG_LEVEL": "WARNING",
        # The seed requests are really applied (gitops applier, eager task): into a throw-away repository.
        "PORTAL_DATA_DIR": scratch,
    })  # fmt: skip
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


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


def make_requests(count: int, per_request: int, *, cluster_name: str = "gpu-east", fresh: bool = True):
    """`count` provisioning requests on `cluster_name` (half training gangs, half inference) and their pods;
    `fresh`: the requests made before are deleted first."""
    from django.contrib.auth import get_user_model

    from intake.models import GpuRequest
    from intake.services import request_approve, request_submit, request_transition
    from portal.models import Team
    from provisioning.models import Cluster, ProvisioningJob
    from provisioning.selectors import request_manifests
    from tests.provisioning.reconcile import pods as k8s

    if fresh:
        GpuRequest.objects.all().delete()
    team = Team.objects.get(slug="bench")
    engineer = get_user_model().objects.get(username="bench-eve")
    approver = get_user_model().objects.get(username="bench-pat")
    cluster = Cluster.objects.get(name=cluster_name)
    # A fleet big enough for the benchmark's gangs, so approval's capacity check lets them through.
    cluster.pools.filter(name="h100-train").update(node_count=max(16, per_request * 2))
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
    pods = []
    for n, gpu_request in enumerate(requests):
        workload = copy.deepcopy(workloads[gpu_request.workload_class])
        # The request's own names and labels, as its render would give them.
        template = templates[0 if gpu_request.workload_class == "training" else 1]
        name = workload["metadata"]["name"].replace(f"-r{template.pk}", f"-r{gpu_request.pk}")
        workload["metadata"].update(name=name, uid=f"00000000-0000-4000-8000-{gpu_request.pk:012d}")
        workload["spec"]["template"]["metadata"]["labels"]["gpu-portal.io/request-id"] = str(gpu_request.pk)
        pods.extend(pods_for(gpu_request, workload, KINDS[n % len(KINDS)], per_request))
    return requests, pods


def measure(label: str, func, *, rounds: int = 1):
    """Best and median time of `func` over `rounds`, and the statements it sent to the database (every one,
    savepoints included, counted as the database driver executes them)."""
    from django.db import connection

    times, queries, result = [], 0, None
    for _ in range(rounds):
        gc.collect()
        count = [0]

        def counter(execute, sql, params, many, context):
            count[0] += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counter):
            start = time.perf_counter()
            result = func()
            times.append(time.perf_counter() - start)
        queries = count[0]
    return {"label": label, "best": min(times), "median": statistics.median(times), "queries": queries,
            "result": result}


@contextlib.contextmanager
def notices_queued():
    """Tasks sent while measuring go to the (in-memory) broker, as in production, instead of running in-process."""
    from portal.celery import app

    app.conf.task_always_eager = False
    try:
        yield
    finally:
        app.conf.task_always_eager = True


def configuration(count: int, per_request: int, rounds: int, *, churn: bool = True) -> dict:
    from provisioning.models import Cluster, GangStall
    from provisioning.reconcile import status_reconcile
    from tests.provisioning.reconcile import pods as k8s

    requests, pods = make_requests(count, per_request)
    cluster = Cluster.objects.get(name="gpu-east")
    body = json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "999999"},
                       "items": pods}).encode()
    pod_count = len(pods)
    del pods
    decode = measure("decode", lambda: json.loads(body), rounds=rounds)
    listed = json.loads(body)["items"]

    def cycle(pods_now):
        return lambda: status_reconcile(cluster=cluster, pods=pods_now, now=NOW)

    with notices_queued():
        first = measure("first", cycle(listed))
        steady = measure("steady", cycle(listed), rounds=rounds)
        result = {"count": count, "per_request": per_request, "pods": pod_count, "bytes": len(body),
                  "decode": decode, "first": first, "steady": steady, "stalls": GangStall.objects.count()}
        if churn:
            # 1 % of the requests change: inference requests that were Pending get their replicas ready.
            changing = {r.pk for n, r in enumerate(requests) if r.workload_class == "inference"
                        and KINDS[n % len(KINDS)] == "pending"}
            changing = set(sorted(changing)[: max(1, count // 100)])
            churned = [k8s.moved(p, k8s.running(p, "gpu-h100-900", NOW)) if int(
                p["metadata"]["labels"]["gpu-portal.io/request-id"]) in changing else p for p in listed]
            result["churn"] = measure("churn", cycle(churned))
    return result


def _reconcile_share(database: str, clusters: list[tuple[int, list]], results) -> None:
    """One worker process: reconcile its clusters, one after the other, on `database`."""
    from django.db import connections

    from provisioning.models import Cluster
    from provisioning.reconcile import status_reconcile

    connections["default"].settings_dict["NAME"] = database
    start, events = time.perf_counter(), 0
    with notices_queued():
        for cluster_id, pods in clusters:
            events += status_reconcile(cluster=Cluster.objects.get(pk=cluster_id), pods=pods, now=NOW).events
    connections.close_all()
    results.put((time.perf_counter() - start, events))


def scale_out(requests: int, clusters: int, workers: list[int]) -> list[dict]:
    """The first cycle over `clusters` clusters run by 1, 2, ... worker processes at once, each run on a fresh copy
    (CREATE DATABASE ... TEMPLATE) of the same data. Returns, per worker count, the wall time and the events."""
    import multiprocessing

    import psycopg
    from django.db import connections

    from provisioning.demo import CLUSTERS
    from provisioning.inventory import cluster_declare
    from provisioning.models import Cluster

    east = next(dict(spec) for spec in CLUSTERS if spec["name"] == "gpu-east")
    work = []
    for n in range(clusters):
        name = f"bench-{n + 1}"
        cluster_declare(**{**east, "name": name})
        _, pods = make_requests(max(2, requests // clusters), 10, cluster_name=name, fresh=n == 0)
        work.append((Cluster.objects.get(name=name).pk, json.loads(json.dumps(pods))))
    connections.close_all()
    admin = urlunsplit(urlsplit(bench_database_url())._replace(path="/postgres"))
    context = multiprocessing.get_context("fork")
    runs = []
    for count in workers:
        copy_name = f"{DB_NAME}_w{count}"
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{copy_name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{copy_name}" TEMPLATE "{DB_NAME}"')
        results = context.Queue()
        shares = [work[i::count] for i in range(count)]
        processes = [context.Process(target=_reconcile_share, args=(copy_name, share, results)) for share in shares]
        start = time.perf_counter()
        for process in processes:
            process.start()
        outcomes = [results.get(timeout=900) for _ in processes]
        wall = time.perf_counter() - start
        for process in processes:
            process.join()
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{copy_name}" WITH (FORCE)')
        runs.append({"workers": count, "wall": wall, "events": sum(e for _, e in outcomes),
                     "pods": sum(len(pods) for _, pods in work)})
    return runs


def verdict(what: str, baseline: str, measured: str, ok: bool) -> bool:
    print(f"  {what:<52} baseline {baseline:<22} measured {measured:<20} {'OK' if ok else 'NOT met'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--pods-per-request", type=int, nargs="+", default=[10, 5])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pods", type=int, default=50_000, help="also measure the steady cycle at this many pods "
                        "(10 per request); 0: skip")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2],
                        help="worker counts for the scale-out measurement; none: skip")
    parser.add_argument("--clusters", type=int, default=4)
    args = parser.parse_args()

    setup_django()
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

    print(f"python {platform.python_version()} on {platform.machine()}, database {DB_NAME}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results = [configuration(args.requests, n, args.rounds) for n in args.pods_per_request]
    for r in results:
        print(f"\n{r['pods']:,} pods of {r['count']:,} requests ({r['per_request']} per request), "
              f"PodList {r['bytes'] / 1e6:.1f} MB; {r['stalls']} stalls opened")
        base = r["decode"]["best"]
        print(f"  {'decode (baseline)':<22} {base:7.3f} s")
        for key, what in (("first", "first cycle"), ("steady", "steady cycle"), ("churn", "cycle, 1 % changing")):
            m = r[key]
            outcome = m["result"]
            print(f"  {what:<22} {m['best']:7.3f} s  ({m['best'] / base:4.1f} x decode)  {m['queries']:5d} queries  "
                  f"{len(outcome.transitions):4d} status changes  {outcome.events:6d} new events")
    large = None
    if args.pods:
        large = configuration(args.pods // 10, 10, args.rounds, churn=False)
        base, steady = large["decode"]["best"], large["steady"]["best"]
        print(f"\n{large['pods']:,} pods of {large['count']:,} requests, PodList {large['bytes'] / 1e6:.1f} MB")
        print(f"  {'decode (baseline)':<22} {base:7.3f} s")
        for key, what in (("first", "first cycle"), ("steady", "steady cycle")):
            m = large[key]
            print(f"  {what:<22} {m['best']:7.3f} s  ({m['best'] / base:4.1f} x decode)  {m['queries']:5d} queries  "
                  f"{m['result'].events:6d} new events")
    runs = scale_out(args.requests, args.clusters, args.workers) if args.workers else []
    if runs:
        print(f"\nfirst cycle over {args.clusters} clusters ({runs[0]['pods']:,} pods), worker processes at once:")
        for run in runs:
            print(f"  {run['workers']} worker(s): {run['wall']:7.3f} s wall, {run['pods'] / run['wall']:8,.0f} pods/s, "
                  f"{run['events']} new events")

    print("\ntargets (baselines from this run):")
    ok = True
    for r in results:
        base, first, steady = r["decode"]["best"], r["first"]["best"], r["steady"]["best"]
        if r["pods"] == 10_000:
            ok &= verdict(f"first cycle at {r['pods']:,} pods <= {FIRST_TARGET} x decode", f"decode {base:.3f} s",
                          f"{first:.3f} s = {first / base:.2f} x", first <= FIRST_TARGET * base)
        ok &= verdict(f"steady cycle at {r['pods']:,} pods <= {TARGET_SECONDS} s", f"{TARGET_SECONDS} s",
                      f"{steady:.3f} s", steady <= TARGET_SECONDS)
    if large:
        base, steady = large["decode"]["best"], large["steady"]["best"]
        ok &= verdict(f"steady cycle at {large['pods']:,} pods <= {STEADY_TARGET} x decode", f"decode {base:.3f} s",
                      f"{steady:.3f} s = {steady / base:.2f} x", steady <= STEADY_TARGET * base)
    for key in ("first", "steady", "churn"):
        counts = sorted({r[key]["queries"] for r in results})
        ok &= verdict(f"{key} cycle queries the same for every pod count", f"{results[0][key]['queries']} queries",
                      f"{counts}", len(counts) == 1)
    if len(runs) > 1:
        events = sorted({run["events"] for run in runs})
        ok &= verdict("the same new events for every worker count", f"{runs[0]['events']} (1 worker)",
                      f"{events}", len(events) == 1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

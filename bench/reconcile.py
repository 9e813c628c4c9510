"""Benchmark of status reconciliation: one cycle over the pods of 1,000 requests, its time and database queries,
beside the time to decode the same pod list from JSON (what the API client does with a LIST answer anyway).

    python bench/reconcile.py [--requests 1000] [--pods-per-request 10 5] [--rounds 5]

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

Targets: steady <= 2 s, and a query count that does not grow with the number of pods (compare the configs).
"""
from __future__ import annotations

import argparse
import atexit
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
        "CELERY_TASK_ALWAYS_EAGER": "true",  # notices are delivered in-process, to the in-memory mail box
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


def make_requests(count: int, per_request: int):
    """`count` provisioning requests on gpu-east (half training gangs, half inference) and their pods."""
    from django.contrib.auth import get_user_model

    from intake.models import GpuRequest
    from intake.services import request_approve, request_submit, request_transition
    from portal.models import Team
    from provisioning.models import Cluster, ProvisioningJob
    from provisioning.selectors import request_manifests
    from tests.provisioning.reconcile import pods as k8s

    GpuRequest.objects.all().delete()
    team = Team.objects.get(slug="bench")
    engineer = get_user_model().objects.get(username="bench-eve")
    approver = get_user_model().objects.get(username="bench-pat")
    cluster = Cluster.objects.get(name="gpu-east")
    # A fleet big enough for the benchmark's gangs, so approval's capacity check lets them through.
    cluster.pools.filter(name="h100-train").update(node_count=max(16, per_request * 2))
    common = {"tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60, "gpus_per_replica": 8,
              "replicas": per_request, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
    serving = {"tenancy": "multi_tenant", "latency": "latency_sensitive", "gpu_memory_gb": 16, "gpus_per_replica": 1,
               "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
    templates = []
    for workload_class, extra in (("training", {}), ("inference", serving)):
        first = request_submit(user=engineer, team=team, name=f"seed-{workload_class}",
                               raw_answers={**common, "workload_class": workload_class, **extra})
        if first.status == "pending_approval":
            request_approve(user=approver, request_id=first.pk)  # applied at once: the task runs eagerly
        first.refresh_from_db()
        if first.status != "provisioning":
            first = request_transition(request_id=first.pk, to_status="provisioning", actor=None)
        templates.append(first)
    fields = ["answers", "defaulted_answers", "decision", "policy_version_id", "rule_key", "workload_class",
              "strategy"]
    clones = [GpuRequest(team=team, name=f"bench-{i:04d}", requested_by=engineer, status="provisioning",
                         status_changed_at=T0, **{f: getattr(templates[i % 2], f) for f in fields})
              for i in range(count - len(templates))]
    GpuRequest.objects.bulk_create(clones, batch_size=500)
    GpuRequest.objects.filter(pk__in=[t.pk for t in templates]).update(status_changed_at=T0)
    requests = list(GpuRequest.objects.select_related("team").order_by("pk"))
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


def configuration(count: int, per_request: int, rounds: int) -> dict:
    from provisioning.models import Cluster, GangStall
    from provisioning.reconcile import status_reconcile
    from tests.provisioning.reconcile import pods as k8s

    requests, pods = make_requests(count, per_request)
    cluster = Cluster.objects.get(name="gpu-east")
    body = json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "999999"},
                       "items": pods}).encode()
    decode = measure("decode", lambda: json.loads(body), rounds=rounds)
    listed = json.loads(body)["items"]

    def cycle(pods_now):
        return lambda: status_reconcile(cluster=cluster, pods=pods_now, now=NOW)

    first = measure("first", cycle(listed))
    steady = measure("steady", cycle(listed), rounds=rounds)
    # 1 % of the requests change: inference requests that were Pending get their replicas ready.
    changing = {r.pk for r in requests if r.workload_class == "inference"
                and KINDS[requests.index(r) % len(KINDS)] == "pending"}
    changing = set(sorted(changing)[: max(1, count // 100)])
    churned = [k8s.moved(p, k8s.running(p, "gpu-h100-900", NOW)) if int(
        p["metadata"]["labels"]["gpu-portal.io/request-id"]) in changing else p for p in listed]
    churn = measure("churn", cycle(churned))
    return {"count": count, "per_request": per_request, "pods": len(pods), "bytes": len(body), "decode": decode,
            "first": first, "steady": steady, "churn": churn, "stalls": GangStall.objects.count()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--pods-per-request", type=int, nargs="+", default=[10, 5])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    setup_django()
    from provisioning.demo import CLUSTERS
    from portal.models import Team
    from portal.services import user_upsert
    from provisioning.inventory import cluster_declare

    for spec in CLUSTERS:
        spec = dict(spec)
        cluster_declare(pools=spec.pop("pools"), **spec)
    Team.objects.create(slug="bench", name="Bench", cost_center="CC-0", notification_email="bench@example.com")
    user_upsert(username="bench-eve", role="engineer", team_slugs=["bench"], password="bench-password-1")
    user_upsert(username="bench-pat", role="platform", team_slugs=[], password="bench-password-1")

    print(f"python {platform.python_version()} on {platform.machine()}, database {DB_NAME}")
    results = [configuration(args.requests, n, args.rounds) for n in args.pods_per_request]
    ok = True
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
        ok &= r["steady"]["best"] <= TARGET_SECONDS
    steady_queries = {r["steady"]["queries"] for r in results}
    churn_queries = {r["churn"]["queries"] for r in results}
    print(f"\nsteady cycle <= {TARGET_SECONDS} s: {'yes' if ok else 'NO'}; query count the same for every pod count: "
          f"steady {'yes' if len(steady_queries) == 1 else 'NO'} {sorted(steady_queries)}, "
          f"churn {'yes' if len(churn_queries) == 1 else 'NO'} {sorted(churn_queries)}")
    return 0 if ok and len(steady_queries) == 1 and len(churn_queries) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())

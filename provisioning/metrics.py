"""Prometheus metric families about provisioning jobs, computed in SQL at scrape time (see portal.metrics)."""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Q, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from portal.metrics import PREFIX

from .choices import JobKind, JobStatus
from .models import Cluster, MigPlan, MigPlanStep, Node, ProvisioningJob
from .selectors import capacity_of
from .selectors.clusters import no_api_server_note


def provisioning_jobs() -> Iterable[Metric]:
    rows = {
        row["kind"]: row
        for row in ProvisioningJob.objects.order_by().values("kind").annotate(
            attempts=Sum("attempts"), failed=Count("id", filter=Q(status=JobStatus.FAILED))
        )
    }
    by_status = GaugeMetricFamily(f"{PREFIX}provisioning_jobs", "Provisioning jobs by kind and current status",
                                  labels=["kind", "status"])
    counts = {(r["kind"], r["status"]): r["n"]
              for r in ProvisioningJob.objects.order_by().values("kind", "status").annotate(n=Count("id"))}
    for kind in JobKind.values:
        for status in JobStatus.values:
            by_status.add_metric([kind, status], counts.get((kind, status), 0))
    attempts = CounterMetricFamily(f"{PREFIX}provisioning_attempts", "Apply/teardown attempts made, retries included",
                                   labels=["kind"])
    failures = CounterMetricFamily(f"{PREFIX}provisioning_failures", "Jobs that failed for good", labels=["kind"])
    for kind in JobKind.values:
        attempts.add_metric([kind], (rows.get(kind) or {}).get("attempts") or 0)
        failures.add_metric([kind], (rows.get(kind) or {}).get("failed") or 0)
    yield by_status
    yield attempts
    yield failures


COLLECTORS = {"provisioning.jobs": provisioning_jobs}


# --- inventory and MIG plans ---------------------------------------------


def inventory() -> Iterable[Metric]:
    """Per cluster: the last sync (time, ok), discrepancies, and free and used GPU equivalents by strategy."""
    synced = GaugeMetricFamily(f"{PREFIX}inventory_last_sync_timestamp_seconds",
                               "When the cluster's inventory was last discovered (0: never)", labels=["cluster"])
    failing = GaugeMetricFamily(f"{PREFIX}inventory_sync_failing",
                                "1 if the last inventory sync of a cluster with an API server failed",
                                labels=["cluster"])
    discrepancies = GaugeMetricFamily(f"{PREFIX}inventory_discrepancies",
                                      "Declared-versus-discovered differences on the cluster and its pools",
                                      labels=["cluster"])
    gpus = GaugeMetricFamily(f"{PREFIX}inventory_gpu_equivalents", "GPU equivalents on present nodes",
                             labels=["cluster", "strategy", "state"])
    nodes_by_cluster: dict[int, list] = {}
    for node in Node.objects.filter(present=True).select_related("gpu_model").only(
            "cluster_id", "name", "gpu_model__key", "sharing_mode", "gpu_replicas", "gpu_resources", "gpu_used",
            "mig_devices", "unschedulable", "mig_strategy"):
        nodes_by_cluster.setdefault(node.cluster_id, []).append(node)
    for cluster in Cluster.objects.prefetch_related("pools").order_by("name"):
        synced.add_metric([cluster.name], cluster.last_synced_at.timestamp() if cluster.last_synced_at else 0)
        failing.add_metric([cluster.name], int(bool(cluster.last_sync_error) and no_api_server_note(cluster) is None))
        count = len(cluster.discrepancies or []) + sum(len(p.discrepancies or []) for p in cluster.pools.all())
        discrepancies.add_metric([cluster.name], count)
        for strategy, figures in capacity_of(nodes_by_cluster.get(cluster.pk, [])).items():
            for state in ("total", "used", "free"):
                gpus.add_metric([cluster.name, strategy, state], figures[f"equivalents_{state}"])
    steps = GaugeMetricFamily(f"{PREFIX}mig_plan_steps", "Steps of approved and executing MIG plans by state",
                              labels=["state"])
    counts = dict(MigPlanStep.objects.filter(plan__status__in=["approved", "executing"]).order_by()
                  .values_list("state").annotate(n=Count("id")))
    for state in ("pending", "cordoned", "draining", "labelled", "reconfiguring", "uncordoned", "done", "failed",
                  "stuck"):
        steps.add_metric([state], counts.get(state, 0))
    failed = GaugeMetricFamily(f"{PREFIX}mig_plans_failed", "MIG plans that ended failed (a node may be cordoned)")
    failed.add_metric([], MigPlan.objects.filter(status="failed").count())
    yield synced
    yield failing
    yield discrepancies
    yield gpus
    yield steps
    yield failed


COLLECTORS["provisioning.inventory"] = inventory

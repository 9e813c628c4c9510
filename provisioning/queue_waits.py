"""Why the requests queued in a Kueue cluster wait, and when each is likely to start, for the whole queue at once:
one read of the cluster (its ClusterQueues, its Workloads, each queue's pending list from Kueue's visibility API),
a few queries whatever the depth of the queue, each ClusterQueue played forward once (`provisioning.queue_eta`),
and every reading stored in two statements. At fleet size, with hundreds of requests queued, one request at a time
(`provisioning.wait_refresh.request_wait_refresh`) would read the same queue hundreds of times.

What the estimate uses, all of it read at the moment of the estimate: the queue's order and GPU quota, what each
admitted workload holds and since when (its QuotaReserved condition; its start as recorded when its pods ran),
each request's `expected_hours` (or its team's median completed run), the team's finished runs (their start and
end against what they said), the workloads created over the last hour (how much, and what, keeps arriving), and
when the queue admitted lately (in rounds, or one at a time).
"""
from __future__ import annotations

import datetime
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from intake.choices import RequestStatus
from intake.models import GpuRequest

from . import queue_eta, wait_reasons
from .contract import REQUEST_ID, parse_time
from .kube.client import KubeClient
from .kube.connection import cluster_connection
from .kube.scheduling import cluster_queue_pending, list_cluster_queues
from .kube.workloads import list_workloads
from .models import Cluster, RequestWait

GPU = "nvidia.com/gpu"
REQUEST_LABEL_SUFFIX = "/" + REQUEST_ID  # under whatever label domain the cluster uses
ARRIVALS_OVER = datetime.timedelta(hours=1)
RECENT_ADMISSIONS = datetime.timedelta(minutes=30)
FINISHED_RUNS = 2000  # the most recent finished runs that measure the teams' run times
WAITING = (RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.STALLED)


def _condition(workload: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in (workload.get("status") or {}).get("conditions") or () if c.get("type") == kind), {})


def workload_gpus(workload: Mapping[str, Any]) -> float:
    """The GPUs a Workload asks for: each pod set's count times its pod's nvidia.com/gpu (limits, else requests),
    as Kueue counts it against the quota."""
    total = 0.0
    for pod_set in (workload.get("spec") or {}).get("podSets") or ():
        per_pod = 0.0
        for container in ((pod_set.get("template") or {}).get("spec") or {}).get("containers") or ():
            resources = container.get("resources") or {}
            value = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(GPU) or 0
            per_pod += float(value)
        total += per_pod * int(pod_set.get("count") or 1)
    return total


def workload_request_id(workload: Mapping[str, Any]) -> int | None:
    """The portal's request a Workload is for: the request-id label of its pod template (Kueue copies the Job's
    pod template into the Workload's pod set)."""
    for pod_set in (workload.get("spec") or {}).get("podSets") or ():
        for key, value in (((pod_set.get("template") or {}).get("metadata") or {}).get("labels") or {}).items():
            if key.endswith(REQUEST_LABEL_SUFFIX) and str(value).isascii() and str(value).isdigit():
                return int(value)
    return None


def cluster_queue_quota(cluster_queue: Mapping[str, Any]) -> float:
    """The ClusterQueue's nominal nvidia.com/gpu quota over all its flavors."""
    return sum(float(resource.get("nominalQuota") or 0)
               for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or ()
               for flavor in group.get("flavors") or () for resource in flavor.get("resources") or ()
               if resource.get("name") == GPU)


def _hours(gpu_request: GpuRequest | None, team_medians: Mapping[int | None, float]) -> float | None:
    """What a queued or admitted workload is expected to run: its request's expected_hours, else its team's median
    completed run; a workload that is not the portal's, the median completed run of all (key None)."""
    if gpu_request is None:
        return team_medians.get(None)
    said = (gpu_request.answers or {}).get("expected_hours")
    return float(said) if said else team_medians.get(gpu_request.team_id, team_medians.get(None))


def _finished_runs() -> tuple[dict[int, list[tuple[float, float]]], dict[int | None, float]]:
    """Per team: (expected hours, actual hours) of its most recent completed runs, and its median actual hours (all
    teams': key None)."""
    rows = RequestWait.objects.filter(actual_start__isnull=False, request__status=RequestStatus.COMPLETED).values_list(
        "request__team_id", "request__answers", "actual_start", "request__status_changed_at",
    ).order_by("-request__status_changed_at")[:FINISHED_RUNS]  # fmt: skip
    runs: dict[int, list[tuple[float, float]]] = {}
    lengths: dict[int, list[float]] = {}
    for team_id, answers, started, ended in rows:
        hours = (ended - started).total_seconds() / 3600
        if hours <= 0:
            continue
        lengths.setdefault(team_id, []).append(hours)
        said = (answers or {}).get("expected_hours")
        if said:
            runs.setdefault(team_id, []).append((float(said), hours))
    medians: dict[int | None, float] = {team_id: statistics.median(values) for team_id, values in lengths.items()}
    if lengths:
        medians[None] = statistics.median(hours for values in lengths.values() for hours in values)
    return runs, medians


def queue_wait_refresh(*, cluster: Cluster, now: datetime.datetime | None = None) -> set[int]:
    """Read and store why every waiting request queued in the cluster's ClusterQueues waits, with its estimated
    start. Returns the requests whose reading was stored. Raises KubeError when the cluster cannot be read."""
    now = now or timezone.now()
    with KubeClient(cluster_connection(cluster)) as kube:
        cluster_queues = list_cluster_queues(kube)
        workloads = list_workloads(kube).workloads
        pending = {cq["metadata"]["name"]: cluster_queue_pending(kube, cluster_queue=cq["metadata"]["name"])
                   for cq in cluster_queues}
    by_name = {(w["metadata"].get("namespace"), w["metadata"]["name"]): w for w in workloads}
    request_ids = {rid for w in workloads if (rid := workload_request_id(w)) is not None}
    requests = {r.pk: r for r in GpuRequest.objects.filter(pk__in=request_ids).select_related("team").only(
        "id", "name", "status", "answers", "team_id", "team__slug", "created_at")}
    starts = dict(RequestWait.objects.filter(request_id__in=request_ids, actual_start__isnull=False).values_list(
        "request_id", "actual_start"))
    runs, team_medians = _finished_runs()
    readings: dict[int, dict[str, Any]] = {}
    for cluster_queue in cluster_queues:
        name = cluster_queue["metadata"]["name"]
        readings |= _queue_readings(
            name=name, quota=cluster_queue_quota(cluster_queue), items=pending.get(name) or [], by_name=by_name,
            admitted=[w for w in workloads if _holds(w, name)], created=workloads, requests=requests, starts=starts,
            runs=runs, team_medians=team_medians, now=now)
    waiting = {pk: reading for pk, reading in readings.items()
               if pk in requests and requests[pk].status in WAITING}
    _store_many(waiting, now=now)
    return set(waiting)


def _holds(workload: Mapping[str, Any], cluster_queue: str) -> bool:
    """Admitted to this ClusterQueue (quota reserved) and not finished: it holds quota."""
    status = workload.get("status") or {}
    return ((status.get("admission") or {}).get("clusterQueue") == cluster_queue
            and _condition(workload, "QuotaReserved").get("status") == "True"
            and _condition(workload, "Finished").get("status") != "True")


def _queue_readings(*, name: str, quota: float, items: list[dict], by_name: dict, admitted: list[dict],
                    created: list[dict], requests: dict[int, GpuRequest], starts: dict[int, datetime.datetime],
                    runs: dict[int, list], team_medians: dict[int, float], now: datetime.datetime
                    ) -> dict[int, dict[str, Any]]:
    def team(request_id: int | None) -> str:
        gpu_request = requests.get(request_id) if request_id is not None else None
        return str(gpu_request.team_id) if gpu_request else ""

    queue, workload_of = [], {}
    for item in items:
        meta = item.get("metadata") or {}
        workload = by_name.get((meta.get("namespace"), meta.get("name")))
        if workload is None:
            continue  # gone since the queue was read
        request_id = workload_request_id(workload)
        if request_id is None:  # not the portal's: it still takes its place, and its quota, in the order
            queue.append(queue_eta.Queued(("other", meta.get("namespace"), meta.get("name")), "",
                                          workload_gpus(workload), _hours(None, team_medians)))
            continue
        workload_of[request_id] = (workload, item)
        queue.append(queue_eta.Queued(request_id, team(request_id), workload_gpus(workload),
                                      _hours(requests.get(request_id), team_medians)))
    held, admission_moments, delays = [], [], []
    for workload in admitted:
        request_id = workload_request_id(workload)
        reserved = parse_time(_condition(workload, "QuotaReserved").get("lastTransitionTime")) or now
        started = starts.get(request_id)
        held.append(queue_eta.Admitted(team(request_id), workload_gpus(workload), reserved, started,
                                       _hours(requests.get(request_id), team_medians)))
        if reserved >= now - RECENT_ADMISSIONS:
            admission_moments.append(reserved)
        if started is not None:
            delays.append((started - reserved).total_seconds())
    arrived = [queue_eta.Queued(("arrived", n), team(workload_request_id(w)), workload_gpus(w),
                                _hours(requests.get(workload_request_id(w)), team_medians))
               for n, w in enumerate(sorted(created, key=lambda w: w["metadata"].get("creationTimestamp") or ""))
               if (parse_time(w["metadata"].get("creationTimestamp")) or now) >= now - ARRIVALS_OVER
               and (w.get("spec") or {}).get("queueName")]
    estimates = queue_eta.estimate_queue(
        now=now, quota=quota, queue=queue, admitted=held, startup=datetime.timedelta(
            seconds=statistics.median(delays) if delays else 0),
        finished={str(team_id): team_runs for team_id, team_runs in runs.items()}, arrived=arrived,
        arrived_over=ARRIVALS_OVER, cycle=queue_eta.admission_cycle(admission_moments))
    readings = {}
    for request_id, (workload, item) in workload_of.items():
        start = estimates.get(request_id)
        readings[request_id] = _reading(name, workload, item, start, depth=len(items), now=now)
    return readings


def _reading(cluster_queue: str, workload: Mapping[str, Any], item: Mapping[str, Any],
             start: queue_eta.Start | None, *, depth: int, now: datetime.datetime) -> dict[str, Any]:
    position = item.get("positionInClusterQueue")
    return {
        "blockers": wait_reasons.as_dicts(wait_reasons.kueue_blockers(workload)),
        "unblock": [queue_unblock_words(cluster_queue, position, depth)],
        "missing_members": [],
        "queue_position": {"cluster_queue": cluster_queue, "pending_in_cluster_queue": depth,
                           "position_in_cluster_queue": position, "local_queue": item.get("localQueueName"),
                           "position_in_local_queue": item.get("positionInLocalQueue")},
        "estimated_start": start.starts_at if start else None,
        "estimate_basis": queue_basis_words(start, now=now),
    }


def queue_unblock_words(cluster_queue: str, position: int | None, depth: int) -> str:
    if position is None:
        return f"It waits in Kueue's ClusterQueue {cluster_queue} ({depth} workloads waiting)."
    return (f"It is number {position + 1} of the {depth} workloads waiting in Kueue's ClusterQueue {cluster_queue}; "
            "it is admitted when the quota that running work frees reaches it.")


def queue_basis_words(start: queue_eta.Start | None, *, now: datetime.datetime) -> str:
    if start is None or start.starts_at is None:
        return ("the queue's quota cannot hold it while the work ahead runs, or the work ahead gave no expected run "
                "time")
    return (f"the ClusterQueue played forward from {now:%H:%M} UTC: {start.admitted_before} workloads admitted "
            f"before it as running work ends (each team's runs measured by its finished ones), admitted about "
            f"{start.admitted_at:%H:%M} UTC")


@transaction.atomic
def _store_many(readings: Mapping[int, Mapping[str, Any]], *, now: datetime.datetime) -> None:
    """Store many readings at once: the same record `provisioning.wait_refresh` keeps for one, the first estimate kept.
    Two statements: the first estimates already given, then one upsert (INSERT ... ON CONFLICT DO UPDATE) of all
    the readings."""
    first = {request_id: (estimate, at) for request_id, estimate, at in RequestWait.objects.filter(
        request_id__in=list(readings), first_estimate__isnull=False).values_list(
        "request_id", "first_estimate", "first_estimated_at")}
    rows = []
    for request_id, reading in readings.items():
        record = RequestWait(request_id=request_id, checked_at=now, read_error="", waiting=True, **reading)
        record.first_estimate, record.first_estimated_at = first.get(
            request_id, (record.estimated_start, now) if record.estimated_start is not None else (None, None))
        rows.append(record)
    RequestWait.objects.bulk_create(rows, batch_size=500, update_conflicts=True, unique_fields=["request"],
                                    update_fields=["checked_at", "read_error", "waiting", "blockers", "unblock",
                                                   "missing_members", "queue_position", "estimated_start",
                                                   "estimate_basis", "first_estimate", "first_estimated_at"])


def kueue_clusters() -> Iterable[Cluster]:
    """The enabled clusters whose gangs queue through Kueue, with an API server to read."""
    return Cluster.objects.filter(enabled=True, gang_scheduler="kueue").exclude(api_server="").order_by("name")


def on_clusters(request_ids: Iterable[int], names: Iterable[str]) -> set[int]:
    """Which of these requests were placed on one of these clusters (one query)."""
    return set(GpuRequest.objects.filter(pk__in=list(request_ids), decision__cluster__in=list(names)).values_list(
        "pk", flat=True))

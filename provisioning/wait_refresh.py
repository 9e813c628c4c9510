"""Why each approved request is not (fully) running: read its scheduler objects and pods from the cluster, explain
them with `provisioning.wait_reasons` and the fit check, and store the reading (`RequestWait`) that the request page and
`GET /api/v1/requests/{id}/wait/` show. The first start estimate and the actual start are kept, so the estimates'
error is tracked (`wait_estimate_error`).

- `request_wait_refresh(request_id=, now=)`: one request, one cluster read (Celery task of the same name).
- `refresh_candidates()`: the requests the beat refreshes (task `provisioning.wait_refresh_all`).
"""
from __future__ import annotations

import datetime
import statistics
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Min, OuterRef, Subquery
from django.utils import timezone

from gpu.gangapi import API_GROUPS
from gpu.vocabulary import KAI, KUEUE, NATIVE, VOLCANO
from intake.choices import RequestStatus
from intake.models import GpuRequest, RequestEvent

from . import wait_lifecycle, wait_reasons, wait_words
from .contract import REQUEST_ID, domain_key, parse_time
from .kube.connection import cluster_connection
from .kube.client import KubeClient
from .kube.errors import KubeError
from .kube.reads import list_pods
from .kube.scheduling import KUEUE_WORKLOAD, list_objects, owned_by, pending_workloads
from .models import Node, RequestWait
from .reconcile.facts import pod_fact
from .selectors import QUOTA_WORDS, cluster_for_request, request_fit, request_manifests, team_quota_state

WAITING = (RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.STALLED)
GANG_BACKENDS = {API_GROUPS[backend]: backend for backend in (VOLCANO, KAI, NATIVE)}
NATIVE_V1ALPHA1 = "scheduling.k8s.io/v1alpha1"  # Kubernetes 1.35: a Workload and no PodGroup


def _backend_objects(objects: list[dict]) -> tuple[dict, dict | None, dict | None]:
    """The workload, the gang's PodGroup, and a native Workload with no PodGroup (1.35's v1alpha1)."""
    workload = next(o for o in objects if o["kind"] in ("Job", "Deployment", "JobSet", "StatefulSet"))
    podgroup = next((o for o in objects if o["kind"] == "PodGroup"), None)
    native = next((o for o in objects if o["kind"] == "Workload" and o["apiVersion"] == NATIVE_V1ALPHA1), None)
    return workload, podgroup, native if podgroup is None else None


def _read(gpu_request: GpuRequest, objects: list[dict]) -> dict[str, Any]:
    """The cluster's side: pods, the Kueue Workload and its queue position, the gang's PodGroup."""
    workload, podgroup, native = _backend_objects(objects)
    namespace = workload["metadata"]["namespace"]
    found: dict[str, Any] = {"pods": [], "workload": None, "podgroup": None, "queue": None, "backend": "",
                             "native_workload": None}
    cluster = cluster_for_request(gpu_request=gpu_request)
    with KubeClient(cluster_connection(cluster)) as kube:
        pods = list_pods(kube, namespace=namespace,
                         label_selector=f"{domain_key(settings.PORTAL_LABEL_DOMAIN, REQUEST_ID)}={gpu_request.pk}")
        found["pods"] = [pod_fact(p, request_id=gpu_request.pk, label_domain=settings.PORTAL_LABEL_DOMAIN)
                         for p in pods]
        queue = (workload["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name")
        if queue:
            found["backend"] = KUEUE
            found["workload"] = owned_by(list_objects(kube, *KUEUE_WORKLOAD, namespace=namespace),
                                         kind=workload["kind"], name=workload["metadata"]["name"])
            if found["workload"] is not None:
                name = found["workload"]["metadata"]["name"]
                items = pending_workloads(kube, namespace=namespace, local_queue=queue)
                mine = next((i for i in items if (i.get("metadata") or {}).get("name") == name), None)
                if mine is not None:
                    found["queue"] = {"local_queue": queue, "pending_in_local_queue": len(items),
                                      "position_in_local_queue": mine.get("positionInLocalQueue"),
                                      "position_in_cluster_queue": mine.get("positionInClusterQueue")}
        elif podgroup is not None:
            found["backend"] = GANG_BACKENDS.get(podgroup["apiVersion"].split("/")[0], "")
            name = podgroup["metadata"]["name"]
            found["podgroup"] = next((o for o in list_objects(kube, podgroup["apiVersion"], "PodGroup",
                                                              namespace=namespace)
                                      if o["metadata"]["name"] == name), None)
        elif native is not None:
            found["backend"] = "native"
            found["native_workload"] = next((o for o in list_objects(kube, NATIVE_V1ALPHA1, "Workload",
                                                                     namespace=namespace)
                                             if o["metadata"]["name"] == native["metadata"]["name"]), None)
    return found


def _observed_hours(team_id: int, workload_class: str) -> float | None:
    """The median run time of the team's completed work of this class: from its move to running to its end."""
    started = RequestEvent.objects.filter(request=OuterRef("pk"), to_status=RequestStatus.RUNNING).values(
        "request").annotate(first=Min("at")).values("first")
    rows = GpuRequest.objects.filter(team_id=team_id, workload_class=workload_class,
                                     status=RequestStatus.COMPLETED).annotate(started=Subquery(started)).values_list(
        "started", "status_changed_at")
    hours = [(end - start).total_seconds() / 3600 for start, end in rows if start and end and end > start]
    return statistics.median(hours) if hours else None


def _cluster_starts(cluster: str, request_ids: set[int]) -> dict[int, datetime.datetime]:
    """When each request's first pod started running on its cluster, as the last inventory sync saw it."""
    starts: dict[int, datetime.datetime] = {}
    for pods in Node.objects.filter(cluster__name=cluster, present=True).values_list("gpu_pods", flat=True):
        for pod in pods or ():
            request_id, at = pod.get("request_id"), pod.get("started_at")
            if request_id in request_ids and at:
                moment = parse_time(at, strict=True)
                starts[request_id] = min(moment, starts.get(request_id, moment))
    return starts


def _team_running(gpu_request: GpuRequest, *, queued_only: bool = False) -> list[wait_reasons.Running]:
    """The team's running work of the same strategy: what frees its quota, and when it is expected to end. With
    `queued_only`, only its gangs on the same cluster: what Kueue's queue counts (the renderer queues only gangs)."""
    others = list(GpuRequest.objects.filter(team_id=gpu_request.team_id, strategy=gpu_request.strategy,
                                            status__in=(RequestStatus.RUNNING, RequestStatus.STALLED))
                  .exclude(pk=gpu_request.pk).order_by("id"))
    if queued_only:
        cluster = gpu_request.decision.cluster
        others = [o for o in others if o.decision.gang and o.decision.cluster == cluster]
    observed: dict[str, float | None] = {}
    started = _cluster_starts(gpu_request.decision.cluster, {o.pk for o in others})
    running = []
    for other in others:
        hours, basis = other.answers.get("expected_hours"), "its start plus its expected_hours"
        if not hours:
            if other.workload_class not in observed:
                observed[other.workload_class] = _observed_hours(other.team_id, other.workload_class)
            hours = observed[other.workload_class]
            basis = f"its start plus the median run time of {gpu_request.team.slug}'s completed " \
                    f"{other.workload_class} work ({hours:.1f} h)" if hours else ""
        # The cluster's own start (its pods' startTime) beats the portal's: that one lags by a reconcile interval.
        start = started.get(other.pk) or other.status_changed_at
        running.append(wait_reasons.Running(
            label=f"#{other.pk} {gpu_request.team.slug}/{other.name}", holds=float(other.decision.gpu_equivalents),
            started_at=start, expected_end=start + datetime.timedelta(hours=float(hours)) if hours else None,
            basis=basis))
    return running


def _preempted(gpu_request: GpuRequest) -> list[wait_reasons.Blocker]:
    """A request that waits because its work was preempted: who preempted it and why, as its history says (the
    reconciler's `Preempted` event, from the pod's DisruptionTarget or Kueue's eviction)."""
    event = RequestEvent.objects.filter(request=gpu_request, reason="Preempted").order_by("-pk").first()
    if event is None:
        return []
    kind = wait_reasons.QUOTA if event.comment.startswith("Kueue") else wait_reasons.CAPACITY
    return [wait_reasons.Blocker(kind, f"request history: Preempted, {event.at:%Y-%m-%d %H:%M} UTC", "Preempted", "",
                                 event.comment)]


def explain(gpu_request: GpuRequest, found: dict[str, Any]) -> dict[str, Any]:
    """The reading to store: blockers, what unblocks them, the queue position and the estimate."""
    blockers: list[wait_reasons.Blocker] = []
    if found["workload"] is not None:
        blockers += wait_reasons.kueue_blockers(found["workload"])
        blockers += wait_lifecycle.kueue_lifecycle_blockers(found["workload"])
    if found["podgroup"] is not None:
        blockers += wait_reasons.podgroup_blockers(found["podgroup"], found["backend"])
    if found.get("native_workload") is not None:
        blockers += wait_lifecycle.native_gang_blockers(found["native_workload"], found["pods"])
    blockers += wait_reasons.pod_blockers(found["pods"])
    blockers += _preempted(gpu_request)
    decision = gpu_request.decision
    unblock, estimates = [], []
    kinds = {b.kind for b in blockers}
    if wait_reasons.QUOTA in kinds:
        quota = team_quota_state(team=gpu_request.team, strategy=decision.strategy, requested=0,
                                 exclude_request_id=gpu_request.pk)
        needed = float(decision.gpu_equivalents)
        if quota.limit is not None:
            shortage = wait_reasons.kueue_quota_shortage(blockers)
            free = max(float(quota.limit) - float(quota.held), 0)
            needed = free + shortage[2] if shortage else needed
            words = f"{QUOTA_WORDS.get(decision.strategy, decision.strategy)} {decision.gpu_model} GPU " \
                    "equivalents"
            # Kueue's shortage is freed only by what Kueue admitted, not by the team's work outside its queue.
            text, estimate = wait_reasons.quota_unblock(team=gpu_request.team.slug, unit=words, limit=float(quota.limit),
                                                   held=float(quota.held), needed=needed,
                                                   running=_team_running(gpu_request, queued_only=bool(shortage)))
            unblock.append(text)
            estimates.append(estimate)
    pods_running = sum(1 for p in found["pods"] if p.phase == "Running")
    wanted = int(decision.replicas or 1)
    missing: list[str] = []
    if gpu_request.status == RequestStatus.STALLED or (pods_running and pods_running < wanted):
        missing = wait_reasons.missing_members(found["pods"], wanted)
    if kinds & {wait_reasons.CAPACITY, wait_reasons.GANG, wait_reasons.SCHEDULING} or missing:
        fit_answer = request_fit(gpu_request=gpu_request,
                                 missing_pods=(wanted - pods_running) if missing else None,
                                 visible_team_ids={gpu_request.team_id})  # the reading is shown to the team
        demand = fit_answer.get("demand") or {}
        fragmentation = wait_reasons.fragmentation_words(
            per_pod=demand.get("per_pod", 1), pods=demand.get("pods", 1), unit="GPU",
            free_by_node=fit_answer.get("free_by_node") or {}) if demand else ""
        text, estimate = wait_reasons.capacity_unblock(fit_answer, fragmentation)
        said = [b for b in blockers if b.kind in (wait_reasons.CAPACITY, wait_reasons.GANG, wait_reasons.SCHEDULING)]
        if fit_answer.get("verdict") == "fits_now" and said:
            text = wait_words.disagreement_words(scheduler_says=said[0].message or said[0].words,
                                                 inventory_says=fit_answer.get("reason", ""),
                                                 synced_at=fit_answer.get("synced_at"), cluster=decision.cluster)
            estimate = wait_reasons.Estimate(None, "the scheduler and the inventory disagree: no estimate until "
                                                   "they agree")
        unblock.append(text)
        estimates.append(estimate)
    known = [e for e in estimates if e.start is not None]
    best = max(known, key=lambda e: e.start) if known else (estimates[0] if estimates else None)
    return {"blockers": wait_reasons.as_dicts(blockers), "unblock": unblock, "missing_members": missing,
            "queue_position": found["queue"], "estimated_start": best.start if best else None,
            "estimate_basis": best.basis if best else "nothing holds it that the portal can see"}


@transaction.atomic
def _store(gpu_request: GpuRequest, reading: dict[str, Any], *, now: datetime.datetime,
           actual_start: datetime.datetime | None = None, read_error: str = "") -> RequestWait:
    record = RequestWait.objects.select_for_update(no_key=True, of=("self",)).filter(request=gpu_request).first()
    record = record or RequestWait(request=gpu_request, checked_at=now)
    record.checked_at, record.read_error = now, read_error
    if actual_start is not None:
        record.waiting = False
        if record.actual_start is None:
            record.actual_start = actual_start
            if record.first_estimate is not None:
                record.error_seconds = int((actual_start - record.first_estimate).total_seconds())
    elif not read_error:
        for key, value in reading.items():
            setattr(record, key, value)
        record.waiting = True
        if record.first_estimate is None and record.estimated_start is not None:
            record.first_estimate, record.first_estimated_at = record.estimated_start, now
    record.save()
    return record


def request_wait_refresh(*, request_id: int, now: datetime.datetime | None = None) -> RequestWait | None:
    """Read and store why the request waits (or, once it runs, when it actually started). None when there is
    nothing to read: not approved yet, finished, or running with its start already recorded."""
    now = now or timezone.now()
    gpu_request = GpuRequest.objects.select_related("team").filter(pk=request_id).first()
    if gpu_request is None or gpu_request.status not in (*WAITING, RequestStatus.RUNNING):
        return None
    record = RequestWait.objects.filter(request=gpu_request).first()
    if gpu_request.status == RequestStatus.RUNNING and (record is None or record.actual_start is not None):
        return None
    objects = request_manifests(gpu_request=gpu_request)
    try:
        found = _read(gpu_request, objects)
    except KubeError as exc:
        return _store(gpu_request, {}, now=now, read_error=str(exc))
    if gpu_request.status == RequestStatus.RUNNING:
        # It started when its last pod did: a stalled gang's first ranks ran long before the gang did.
        starts = [p.running_since for p in found["pods"] if p.phase == "Running" and p.running_since]
        return _store(gpu_request, {}, now=now, actual_start=max(starts) if starts else gpu_request.status_changed_at)
    return _store(gpu_request, explain(gpu_request, found), now=now)


def refresh_candidates() -> list[int]:
    """Every waiting request, and every running one whose actual start is not recorded yet."""
    ids = list(GpuRequest.objects.filter(status__in=WAITING).values_list("pk", flat=True).order_by("pk"))
    ids += list(GpuRequest.objects.filter(status=RequestStatus.RUNNING, wait__isnull=False,
                                          wait__actual_start__isnull=True).values_list("pk", flat=True).order_by("pk"))
    return ids

"""Preemption notices: the owner of a request whose pod the scheduler preempted is told once, who preempted it and
why (the same words as the request's history), by e-mail to the requester and the team, and the team webhook.
Queued as portal notices keyed by the pod (`preemption_notice_key`), so a cycle that sees the pod again, or a
second worker, queues nothing more. On a Kueue cluster, Workloads Kueue evicted to preempt them are recorded and
notified the same way (`kueue_preemptions_record`, keyed by the Workload and the eviction's time)."""
from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.template.loader import render_to_string

from intake import events
from intake.models import GpuRequest
from portal.models import Notice
from portal.notices import notice_queue

from .. import contract
from ..kube.client import raw
from ..kube.errors import kube_errors
from ..kube.scheduling import KUEUE_WORKLOAD
from .kueue_words import kueue_preemption_events
from .words import PlainEvent

PREEMPTED = "Preempted"  # the reason of the plain-words event (words.pod_events)


def preemption_notice_key(event_key: str) -> str:
    return f"preempted:{event_key}"[:200]


def _request_url(gpu_request: GpuRequest) -> str:
    return f"{settings.PORTAL_BASE_URL or 'http://127.0.0.1:8000'}/requests/{gpu_request.pk}/"


def preemptions_notify(items: Iterable[tuple[GpuRequest, PlainEvent]], *, cluster: str) -> list[int]:
    """Queue the notices of preempted pods (each once); returns the ids queued now. Those queued before are
    skipped in one query, so a pod seen preempted cycle after cycle (its grace period) costs nothing more."""
    items = list(items)
    queued = set(Notice.objects.filter(key__in=[preemption_notice_key(e.key) for _, e in items])
                 .values_list("key", flat=True))
    created: list[int] = []
    for gpu_request, event in items:
        if preemption_notice_key(event.key) in queued:
            continue
        team = gpu_request.team
        url = _request_url(gpu_request)
        payload = {"event": "pod.preempted", "text": event.text, "cluster": cluster,
                   "request": {"id": gpu_request.pk, "name": gpu_request.name, "team": team.slug,
                               "workload_class": gpu_request.workload_class, "url": url}}
        recipients = list(dict.fromkeys(a for a in [getattr(gpu_request.requested_by, "email", ""),
                                                    team.notification_email] if a))
        body = render_to_string("provisioning/email/preempted.txt", {
            "gpu_request": gpu_request, "team": team, "text": event.text, "url": url})
        subject = f"[GPU portal] {team.slug}/{gpu_request.name} (request #{gpu_request.pk}): preempted"
        created += notice_queue(key=preemption_notice_key(event.key), team=team, subject=subject, body=body,
                                payload=payload, recipients=recipients)
    return created


def kueue_preemptions_record(*, cluster, kube, selector: str) -> int:
    """On a Kueue cluster: the Workloads Kueue evicted to preempt them (`kueue_words`), as events of the requests
    whose Jobs they admit, each recorded once, and their owners notified once. Two LISTs (the portal's Jobs, every
    Workload); returns how many events were new."""
    jobs = _list(kube, "batch/v1", "Job", selector)
    requests_by_job_uid = {}
    for job in jobs:
        request_id = contract.bound_request_id(contract.pod_identity(job, settings.PORTAL_LABEL_DOMAIN))
        if request_id is not None:
            meta = job.get("metadata") or {}
            requests_by_job_uid[meta.get("uid", "")] = (request_id, f"{meta.get('namespace')}/{meta.get('name')}")
    if not requests_by_job_uid:
        return 0
    found = kueue_preemption_events(_list(kube, *KUEUE_WORKLOAD, None), requests_by_job_uid)
    if not found:
        return 0
    recorded = events.events_cluster_record(items=((e.request_id, e.key, e.reason, e.text) for e in found))
    requests = GpuRequest.objects.select_related("team", "requested_by").in_bulk({e.request_id for e in found})
    preemptions_notify(((requests[e.request_id], e) for e in found if e.request_id in requests), cluster=cluster.name)
    return recorded


def _list(kube, api_version: str, kind: str, selector: str | None) -> list[dict]:
    resource = kube.resource(api_version, kind)
    with kube_errors(f"list {kind}"):
        listed = kube.dynamic.get(resource, label_selector=selector, serializer=raw) if selector else \
            kube.dynamic.get(resource, serializer=raw)
    return list(listed.get("items") or ())

"""Preemption notices: the owner of a request whose pod the scheduler preempted is told once, who preempted it and
why (the same words as the request's history), by e-mail to the requester and the team, and the team webhook.
Queued as portal notices keyed by the pod (`preemption_notice_key`), so a cycle that sees the pod again, or a
second worker, queues nothing more."""
from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.template.loader import render_to_string

from intake.models import GpuRequest
from portal.notices import notice_queue

from .words import PlainEvent

PREEMPTED = "Preempted"  # the reason of the plain-words event (words.pod_events)


def preemption_notice_key(event_key: str) -> str:
    return f"preempted:{event_key}"[:200]


def _request_url(gpu_request: GpuRequest) -> str:
    return f"{settings.PORTAL_BASE_URL or 'http://127.0.0.1:8000'}/requests/{gpu_request.pk}/"


def preemptions_notify(items: Iterable[tuple[GpuRequest, PlainEvent]], *, cluster: str) -> list[int]:
    """Queue the notices of preempted pods (each once); returns the ids queued now."""
    created: list[int] = []
    for gpu_request, event in items:
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

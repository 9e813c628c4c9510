"""Reads for the request pages, the request API and the review page, from every layer the request touches: the
running clock with metered usage and access (chargeback, provisioning), why an approved request waits, the
right-sizing suggestion, and the extra sections of the preview and the review page (cost, budget, admission)."""
from __future__ import annotations

from datetime import timedelta

from chargeback.budget_hooks import budget_review_section
from chargeback.cost_preview import cost_preview_section
from chargeback.idle.selectors import rightsizing_get
from chargeback.request_usage import request_usage_so_far
from intake.choices import RequestStatus
from intake.models import GpuRequest
from provisioning.selectors import request_wait
from provisioning.selectors.access import request_access
from provisioning.selectors.admission import admission_review_section

__all__ = ["preview_sections", "request_rightsizing", "request_running_facts", "request_wait", "review_sections"]


def request_running_facts(gpu_request: GpuRequest) -> dict | None:
    """A running request's clock and reach: since when it runs, when it is expected to end (its expected_hours, or
    its lease if that ends first), the GPU-hours metered so far and how to reach the workload. Reads the prefetched
    events. (A stalled gang's page says what it burns instead.)"""
    if gpu_request.status != RequestStatus.RUNNING:
        return None
    since = next((e.at for e in gpu_request.events.all()
                  if e.kind == "transition" and e.to_status == RequestStatus.RUNNING), None)
    since = since or gpu_request.status_changed_at
    hours = gpu_request.answers.get("expected_hours")
    expected_end = since + timedelta(hours=float(hours)) if hours else None
    lease_end = gpu_request.lease_expires_at
    ends_by_lease = lease_end is not None and (expected_end is None or lease_end < expected_end)
    return {"since": since, "expected_end": lease_end if ends_by_lease else expected_end,
            "end_basis": "its lease" if ends_by_lease else ("its expected run time" if hours else ""),
            "usage": request_usage_so_far(gpu_request=gpu_request),
            "access": request_access(gpu_request=gpu_request)}


def request_rightsizing(gpu_request: GpuRequest) -> dict:
    """The right-sizing suggestion from what the request's GPUs did (chargeback)."""
    return rightsizing_get(gpu_request=gpu_request)


def preview_sections(*, team, decision, answers: dict) -> list[dict]:
    """The preview's sections under the decision, before anything is submitted: the projected GPU-hours and cost."""
    shown = cost_preview_section(team=team, decision=decision, answers=answers)
    return [shown] if shown else []


def review_sections(*, gpu_request: GpuRequest) -> list[dict]:
    """The review page's sections under fit and quota: for work bound to a Kueue Workload its admission
    (provisioning), and the team's budget (chargeback)."""
    return [shown for section in (admission_review_section, budget_review_section)
            if (shown := section(gpu_request=gpu_request))]

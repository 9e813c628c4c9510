"""Leases on grants: a request's decision may carry a lease (`decision.lease`, from the policy or the answer);
it starts when the request is approved, its owner extends it within the policy's maximum, a reminder goes out
before it ends (once per expiry), and at expiry the request is cancelled through the normal path, which tears its
objects down, with the reason recorded (`LeaseExpired`)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from intake import events
from intake.choices import REQUEST_TERMINAL, RequestStatus
from intake.lease_rules import LEASE_EXPIRED, LEASE_EXTENDED, LEASE_REMINDED, lease_hours_words, lease_time_left
from intake.models import GpuRequest
from intake.selectors import EXTEND, request_action_check, request_get
from intake.services import request_transition
from portal.errors import Conflict, InvalidInput
from portal.notices import notice_queue
from provisioning.services import allocation_on_cancelled


@transaction.atomic
def lease_extend(*, user, request_id: int, hours: float, now: datetime | None = None) -> GpuRequest:
    """The owner adds `hours` to the lease; the time left afterwards may not pass the policy's maximum. A new
    expiry gets its own reminder."""
    request_get(user=user, request_id=request_id)  # another team's request: not found
    gpu_request = GpuRequest.objects.select_for_update(no_key=True, of=("self",)).get(pk=request_id)
    request_action_check(user=user, gpu_request=gpu_request, action=EXTEND)
    if gpu_request.status in REQUEST_TERMINAL or gpu_request.lease_expires_at is None:
        raise Conflict(f"Request #{gpu_request.pk} has no running lease to extend "
                       f"({gpu_request.status.replace('_', ' ')}).")
    now = now or timezone.now()
    if not isinstance(hours, (int, float)) or isinstance(hours, bool) or hours <= 0:
        raise InvalidInput("Give the hours to add, a number above 0.", field="hours")
    new_expiry = max(gpu_request.lease_expires_at, now) + timedelta(hours=hours)
    maximum = gpu_request.decision.lease.max_hours
    if maximum is not None and new_expiry - now > timedelta(hours=maximum):
        room = max(timedelta(0), timedelta(hours=maximum) - (gpu_request.lease_expires_at - now))
        raise InvalidInput(
            f"The policy allows at most {maximum:g} hours left on this lease; {lease_hours_words(lease_time_left(gpu_request, now=now))} "
            f"are left, so you can add at most {lease_hours_words(room)}.", field="hours")
    gpu_request.lease_expires_at, gpu_request.lease_reminded_at = new_expiry, None
    gpu_request.save(update_fields=["lease_expires_at", "lease_reminded_at", "updated_at"])
    events.event_note(request=gpu_request, actor=user, reason=LEASE_EXTENDED,
                      comment=f"Lease extended by {hours:g} h; it now ends {new_expiry:%Y-%m-%d %H:%M} UTC.")
    return gpu_request


@dataclass(frozen=True)
class LeaseSweep:
    reminded: list[int]
    expired: list[int]


def _request_url(gpu_request: GpuRequest) -> str:
    return f"{settings.PORTAL_BASE_URL or 'http://127.0.0.1:8000'}/requests/{gpu_request.pk}/"


def _remind(gpu_request: GpuRequest, *, now: datetime) -> None:
    left = gpu_request.lease_expires_at - now
    ends = f"{gpu_request.lease_expires_at:%Y-%m-%d %H:%M} UTC"
    text = (f"The lease of {gpu_request.team.slug}/{gpu_request.name} (request #{gpu_request.pk}) ends {ends}, in "
            f"{lease_hours_words(left)}. Then the portal takes the workload down. Its owner can extend it on "
            f"{_request_url(gpu_request)}.")
    notice_queue(
        key=f"lease-reminder:{gpu_request.pk}:{gpu_request.lease_expires_at.isoformat()}", team=gpu_request.team,
        subject=f"[GPU portal] {gpu_request.team.slug}/{gpu_request.name}: lease ends {ends}",
        body=text + "\n",
        payload={"event": "lease.expiring", "request": gpu_request.pk, "team": gpu_request.team.slug,
                 "name": gpu_request.name, "lease_expires_at": gpu_request.lease_expires_at.isoformat(),
                 "seconds_left": int(left.total_seconds()), "text": text, "url": _request_url(gpu_request)})
    events.event_note(request=gpu_request, reason=LEASE_REMINDED, comment=text)


def lease_sweep(*, now: datetime | None = None) -> LeaseSweep:
    """Beat: remind the owners of leases ending within PORTAL_LEASE_REMINDER_HOURS (once per expiry), and cancel
    the requests whose lease has ended (the cancel path tears their objects down). Running it again does nothing
    more: a reminded request has `lease_reminded_at`, a cancelled one is terminal."""
    now = now or timezone.now()
    live = GpuRequest.objects.exclude(status__in=sorted(REQUEST_TERMINAL)).filter(lease_expires_at__isnull=False)
    reminded, expired = [], []
    soon = now + timedelta(hours=settings.PORTAL_LEASE_REMINDER_HOURS)
    for pk in live.filter(lease_expires_at__gt=now, lease_expires_at__lte=soon, lease_reminded_at__isnull=True
                          ).values_list("pk", flat=True):
        with transaction.atomic():
            gpu_request = (GpuRequest.objects.select_for_update(no_key=True, of=("self",)).select_related("team")
                           .get(pk=pk))
            if gpu_request.lease_reminded_at or gpu_request.status in REQUEST_TERMINAL:
                continue
            _remind(gpu_request, now=now)
            gpu_request.lease_reminded_at = now
            gpu_request.save(update_fields=["lease_reminded_at", "updated_at"])
            reminded.append(pk)
    for gpu_request in live.filter(lease_expires_at__lte=now).only("pk", "lease_expires_at"):
        try:
            with transaction.atomic():  # the cancel and its teardown job, or neither
                cancelled = request_transition(
                    request_id=gpu_request.pk, to_status=RequestStatus.CANCELLED, actor=None, reason=LEASE_EXPIRED,
                    comment=f"The lease ended {gpu_request.lease_expires_at:%Y-%m-%d %H:%M} UTC; the portal took "
                            "the workload down.")
                allocation_on_cancelled(gpu_request=cancelled)
        except Conflict:  # it finished or was cancelled meanwhile
            continue
        expired.append(gpu_request.pk)
    return LeaseSweep(reminded=reminded, expired=expired)

"""The row every background operation keeps (NetBox's Job, Saleor's ExportFile): its status, how many attempts
were made, the last message and when it changed, so the admin and the API show a failure without anyone reading
worker logs. Tables: provisioning.ProvisioningJob and portal.Notice (every notice, stalled gangs' too); their admins
share `portal.admin_mixins.BackgroundJobAdminMixin`."""
from __future__ import annotations

from collections.abc import Callable

from django.db import models
from django.utils import timezone

QUEUED, RETRYING, SENT, FAILED = "queued", "retrying", "sent", "failed"


class BackgroundJob(models.Model):
    # A table narrows `status` to its own vocabulary by redeclaring it with `choices` (same column, same default).
    status = models.CharField(max_length=10, default=QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]


def delivery_attempt(row, send: Callable, *, permanent: type[Exception] | tuple, transient: type[Exception] | tuple,
                     ) -> tuple[str, Exception | None]:
    """One attempt at sending a notice row (locked by the caller, inside its transaction), recorded on the row:
    sent, failed for good on a `permanent` error, or waiting to retry on a `transient` one. The transient error is
    returned, not raised, so the caller raises it after its transaction has committed the attempt."""
    row.attempts += 1
    try:
        send(row)
    except permanent as exc:
        row.status, row.message = FAILED, str(exc)
        row.save()
        return FAILED, None
    except transient as exc:
        row.status, row.message = RETRYING, f"Attempt {row.attempts} failed: {exc}"
        row.save()
        return RETRYING, exc
    row.status, row.sent_at, row.message = SENT, timezone.now(), ""
    row.save()
    return SENT, None

"""The row every background operation keeps (NetBox's Job, Saleor's ExportFile): its status, how many attempts
were made, the last message and when it changed, so the admin and the API show a failure without anyone reading
worker logs. Tables: provisioning.ProvisioningJob, provisioning.GangNotification, portal.Notice; their admins share
`portal.admin_mixins.BackgroundJobAdminMixin`."""
from __future__ import annotations

from django.db import models

QUEUED = "queued"


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

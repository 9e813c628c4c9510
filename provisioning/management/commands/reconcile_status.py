"""Reconcile request statuses with what clusters report about their pods, once, in this process.

    python manage.py reconcile_status [--cluster NAME] [--watch-seconds N]

Each cluster is listed (or its watch resumed), its requests reconciled, then watched for N seconds (default 0:
list and reconcile only). Beat does the same every minute through Celery; this is for operators and cron.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from provisioning.models import Cluster
from provisioning.reconcile import cluster_status_reconcile


class Command(BaseCommand):
    help = "Reconcile request statuses with the pods of each cluster (or of one)."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", help="only this cluster (by name)")
        parser.add_argument("--watch-seconds", type=int, default=0,
                            help="after the list, follow pod changes for this long (default 0: list only)")

    def handle(self, *args, cluster=None, watch_seconds=0, **options):
        if watch_seconds < 0:
            raise CommandError("--watch-seconds must be 0 or more.")
        clusters = Cluster.objects.filter(enabled=True).order_by("name")
        if cluster:
            clusters = Cluster.objects.filter(name=cluster)
            if not clusters.exists():
                raise CommandError(f"No cluster named {cluster!r}.")
        failed = False
        for target in clusters:
            outcome = cluster_status_reconcile(cluster_id=target.pk, watch_seconds=watch_seconds)
            failed |= outcome.status == "error"
            style = self.style.ERROR if outcome.status == "error" else (
                self.style.WARNING if outcome.status != "ok" else self.style.SUCCESS)
            self.stdout.write(style(outcome.summary()))
        if failed:
            raise CommandError("Some clusters could not be reconciled (see above).")

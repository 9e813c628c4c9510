"""Run the portal's Kueue admission check controller in this process (docs/admission-check.md).

    python manage.py admission_check_controller [--cluster NAME] [--watch-seconds N] [--once]

Each pass lists every Kueue cluster's Workloads, decides the portal's check on each, then watches them for N
seconds (default 50) deciding each change; without --once it passes again until stopped, so approvals made in the
portal reach the cluster at the next list. Beat runs list-only passes every PORTAL_ADMISSION_SYNC_SECONDS anyway;
this is the dedicated worker for clusters that want decisions within seconds of a Workload appearing.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from provisioning.admission import admission_checks_sync
from provisioning.models import Cluster


class Command(BaseCommand):
    help = "Run the Kueue admission check controller (list + watch of Workloads) for each Kueue cluster."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", help="only this cluster (by name)")
        parser.add_argument("--watch-seconds", type=int, default=50,
                            help="after each list, follow Workload changes for this long (0: list only)")
        parser.add_argument("--once", action="store_true", help="one pass, then exit")

    def handle(self, *args, cluster=None, watch_seconds=50, once=False, **options):
        if watch_seconds < 0:
            raise CommandError("--watch-seconds must be 0 or more.")
        clusters = Cluster.objects.filter(enabled=True, gang_scheduler="kueue").exclude(api_server="")
        if cluster:
            clusters = Cluster.objects.filter(name=cluster)
            if not clusters.exists():
                raise CommandError(f"No cluster named {cluster!r}.")
        while True:
            failed = False
            for target in clusters.order_by("name"):
                run = admission_checks_sync(cluster_id=target.pk, watch_seconds=watch_seconds)
                failed |= run.status == "error"
                style = self.style.ERROR if run.status == "error" else self.style.SUCCESS
                self.stdout.write(style(run.summary()))
            if once:
                if failed:
                    raise CommandError("Some clusters could not be checked (see above).")
                return

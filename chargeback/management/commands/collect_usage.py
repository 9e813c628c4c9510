from django.core.management.base import BaseCommand, CommandError

from chargeback.services import usage_collect
from portal.errors import DomainError


class Command(BaseCommand):
    help = "Run one usage collection pass: read the portal's pods of every enabled cluster (or one) and ingest them."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", help="only this cluster (by name)")

    def handle(self, *args, cluster=None, **options):
        try:
            collections = usage_collect(cluster_name=cluster)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        failed = False
        for c in collections:
            if c.status == "ok":
                self.stdout.write(
                    f"{c.cluster}: {c.pods_seen} pods, {c.intervals_inserted} new, {c.intervals_updated} updated, "
                    f"{c.intervals_vanished} gone, {c.adjustments} adjustments, {c.flagged} flagged"
                    + (f"; not billable: {c.message}" if c.message else "")
                )
            else:
                failed |= c.status == "failed"
                self.stdout.write(f"{c.cluster}: {c.status}: {c.message}")
        if failed:
            raise CommandError("Some clusters could not be read; see the messages above.")

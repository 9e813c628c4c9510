from django.core.management.base import BaseCommand, CommandError

from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster


class Command(BaseCommand):
    help = (
        "Discover the GPU inventory of every enabled cluster (or one, with --cluster): nodes, their GPU labels and "
        "resources, DRA ResourceSlices, gang schedulers and the Kubernetes version. Clusters without an API server "
        "are skipped with a note. Exits non-zero when a sync failed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", help="name of one cluster (default: every enabled cluster)")

    def handle(self, *args, cluster=None, **options):
        clusters = Cluster.objects.filter(enabled=True).order_by("name")
        if cluster:
            clusters = Cluster.objects.filter(name=cluster)
            if not clusters.exists():
                raise CommandError(f"no cluster named {cluster!r}")
        failed = []
        for item in clusters:
            outcome = inventory_sync(cluster=item)
            self.stdout.write(f"{item.name}: {outcome.status}. {outcome.message}".rstrip())
            if outcome.status == "failed":
                failed.append(item.name)
        if failed:
            raise CommandError(f"inventory sync failed for: {', '.join(failed)}")

"""Exit 0 when a Celery worker ran `portal.ping` recently, 1 otherwise: a health check for the worker/beat pair."""
from django.core.management.base import BaseCommand, CommandError

from portal.selectors import worker_heartbeat


class Command(BaseCommand):
    help = "Check that a worker recorded a heartbeat (portal.ping, sent by beat every minute) recently."

    def add_arguments(self, parser):
        parser.add_argument("--max-age", type=float, default=180.0, help="seconds (default 180)")

    def handle(self, *args, max_age, **options):
        heartbeat = worker_heartbeat()
        if heartbeat is None:
            raise CommandError("no worker heartbeat recorded yet")
        if heartbeat["age_seconds"] > max_age:
            raise CommandError(f"last worker heartbeat is {heartbeat['age_seconds']:.0f} s old (from {heartbeat['worker']})")
        self.stdout.write(f"ok: {heartbeat['worker']} {heartbeat['age_seconds']:.0f} s ago")

from django.core.management.base import BaseCommand

from provisioning.services import catalogue_sync


class Command(BaseCommand):
    help = "Copy the shipped GPU catalogue (gpu/data) into the database."

    def handle(self, *args, **options):
        count = catalogue_sync()
        self.stdout.write(f"catalogue synced: {count} GPU models")

from django.core.management.base import BaseCommand, CommandError

from portal.encryption import UndecryptableSecret
from provisioning.credentials import credentials_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored secret (cluster tokens, team webhook secrets) with the first key of "
        "PORTAL_CREDENTIAL_KEYS. Run it after putting a new key first; then the old keys can be removed."
    )

    def handle(self, *args, **options):
        try:
            count = credentials_reencrypt()
        except UndecryptableSecret as exc:
            raise CommandError(f"{exc}; nothing was changed") from exc
        self.stdout.write(f"{count} stored secrets re-encrypted with the first key")

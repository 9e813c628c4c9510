from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.errors import InvalidInput
from portal.oidc import discovery_document
from portal.services import sign_on_link


class Command(BaseCommand):
    help = ("Link a single sign-on identity (the provider's issuer and subject, `sub`) to an existing portal "
            "account, so that signing on reaches that account: for accounts made before single sign-on, or when a "
            "name clash gave someone a second account (docs/identity.md).")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--subject", required=True, help="the identity's `sub` claim")
        parser.add_argument("--issuer", default="",
                            help="the provider's issuer (default: the configured OIDC_OP_ISSUER or discovery's)")

    def handle(self, *args, username, subject, issuer, **options):
        issuer = issuer or settings.OIDC_OP_ISSUER or discovery_document().get("issuer", "")
        if not issuer:
            raise CommandError("No issuer: pass --issuer, or configure OIDC_OP_ISSUER or OIDC_OP_DISCOVERY_URL.")
        try:
            link = sign_on_link(username=username, issuer=issuer, subject=subject)
        except InvalidInput as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"{link.user.username} signs on as {link.subject} at {link.issuer}")

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from portal.choices import Role
from portal.errors import InvalidInput
from portal.services import token_issue, user_upsert


class Command(BaseCommand):
    help = ("Create a portal user with a role and teams (or update it). Issues an API token (replacing the user's "
            "token of the same name) and prints it as the last line: it is shown this once.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--team", dest="teams", action="append", default=[], help="team slug; repeatable")
        parser.add_argument("--password", default=None, help="a new password revokes the user's API tokens")
        parser.add_argument("--keep-tokens", action="store_true",
                            help="with --password: keep the user's other API tokens working")
        parser.add_argument("--token-name", default="bootstrap", help="name of the issued token (default bootstrap)")
        parser.add_argument("--email", default="")

    def handle(self, *args, username, role, teams, password, keep_tokens, token_name, email, **options):
        try:
            with transaction.atomic():
                user, created = user_upsert(username=username, role=role, team_slugs=teams, password=password,
                                            email=email, keep_tokens=keep_tokens)
                _, clear = token_issue(user=user, name=token_name, replace=True)
        except (ValueError, InvalidInput) as exc:
            raise CommandError(str(exc)) from exc
        verb = "created" if created else "updated"
        team_list = ", ".join(sorted(user.teams.values_list("slug", flat=True))) or "none"
        self.stdout.write(f"user {user.username} {verb}: role={role}, teams={team_list}")
        self.stdout.write(clear)

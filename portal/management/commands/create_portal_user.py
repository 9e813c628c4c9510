from django.core.management.base import BaseCommand, CommandError

from portal.choices import Role
from portal.services import user_upsert


class Command(BaseCommand):
    help = "Create a portal user with a role and teams (or update it). Prints the API token as the last line."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--team", dest="teams", action="append", default=[], help="team slug; repeatable")
        parser.add_argument("--password", default=None)
        parser.add_argument("--email", default="")

    def handle(self, *args, username, role, teams, password, email, **options):
        try:
            user, token, created = user_upsert(
                username=username, role=role, team_slugs=teams, password=password, email=email
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        verb = "created" if created else "updated"
        team_list = ", ".join(sorted(user.teams.values_list("slug", flat=True))) or "none"
        self.stdout.write(f"user {user.username} {verb}: role={role}, teams={team_list}")
        self.stdout.write(token.key)

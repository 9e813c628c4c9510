from django.core.management.base import BaseCommand

from demo.data import DEMO_PASSWORD, USERS, load_demo


class Command(BaseCommand):
    help = "Load demo teams, users, a declared cluster inventory and a few requests (idempotent)."

    def handle(self, *args, **options):
        tokens = load_demo()
        self.stdout.write("Demo data loaded. Logins (password for all: %s):" % DEMO_PASSWORD)
        for username, role, teams in USERS:
            self.stdout.write(f"  {username:<6} {role:<9} {', '.join(teams) or 'all teams':<16} token {tokens[username]}")

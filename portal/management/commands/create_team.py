from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from portal.services import team_upsert


class Command(BaseCommand):
    help = "Create a team (or update its name and cost centre). Safe to run twice."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="DNS-1123 label, e.g. vision-research")
        parser.add_argument("--name", required=True)
        parser.add_argument("--cost-center", dest="cost_center", default=None)

    def handle(self, *args, slug, name, cost_center, **options):
        try:
            team, created = team_upsert(slug=slug, name=name, cost_center=cost_center)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        verb = "created" if created else "updated"
        self.stdout.write(f"team {team.slug} {verb} (name={team.name!r}, cost_center={team.cost_center!r})")

"""Print (or write) the platform decision register as Markdown or JSON, computed now."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal.errors import DomainError
from register.export import register_json, register_markdown
from register.selectors import DEFAULT_DAYS, register_build


class Command(BaseCommand):
    help = ("The platform decision register (policy, inventory, running workloads, recorded decisions) as Markdown "
            "or JSON.")

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["md", "json"], default="md")
        parser.add_argument("--days", default=DEFAULT_DAYS, help="look-back window in days (1-365, default 30)")
        parser.add_argument("--output", "-o", help="write to this file instead of standard output")

    def handle(self, *args, format="md", days=DEFAULT_DAYS, output=None, **options):
        try:
            register = register_build(days=days)
        except DomainError as exc:
            raise CommandError(f"--{exc.field or 'days'}: {exc.message}") from None
        text = register_markdown(register) if format == "md" else register_json(register)
        if output:
            Path(output).write_text(text)
            self.stderr.write(f"Wrote {output}.")
        else:
            self.stdout.write(text, ending="")

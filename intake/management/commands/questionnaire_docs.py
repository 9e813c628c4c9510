from django.core.management.base import BaseCommand

from intake.questionnaire import markdown_table


class Command(BaseCommand):
    help = "Print the questionnaire as the Markdown table docs/questionnaire.md carries (generated from the definition)."

    def handle(self, *args, **options):
        self.stdout.write(markdown_table())

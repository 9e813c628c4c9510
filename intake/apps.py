from django.apps import AppConfig


class IntakeConfig(AppConfig):
    name = "intake"
    verbose_name = "Requests and routing policy"

    def ready(self):
        from portal.metrics import register

        from .metrics import COLLECTORS

        for name, collector in COLLECTORS.items():
            register(name, collector)

from django.apps import AppConfig


class IntakeConfig(AppConfig):
    name = "intake"
    verbose_name = "Requests and routing policy"

    def ready(self):
        from portal.metrics import register_all

        from .metrics import COLLECTORS

        register_all(COLLECTORS)

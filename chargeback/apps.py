from django.apps import AppConfig


class ChargebackConfig(AppConfig):
    name = "chargeback"
    verbose_name = "Metering and chargeback"

    def ready(self):
        from portal.metrics import register_all

        from .metrics import COLLECTORS

        register_all(COLLECTORS)

from django.apps import AppConfig


class ChargebackConfig(AppConfig):
    name = "chargeback"
    verbose_name = "Metering and chargeback"

    def ready(self):
        from portal.metrics import register

        from .metrics import COLLECTORS

        for name, collector in COLLECTORS.items():
            register(name, collector)

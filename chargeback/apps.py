from django.apps import AppConfig


class ChargebackConfig(AppConfig):
    name = "chargeback"
    verbose_name = "Metering and chargeback"

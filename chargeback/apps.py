from django.apps import AppConfig


class ChargebackConfig(AppConfig):
    name = "chargeback"
    verbose_name = "Metering and chargeback"

    def ready(self):
        from portal.metrics import register_all

        from .metrics import COLLECTORS

        register_all(COLLECTORS)

        from intake.hooks import register_decision_gate, register_review_section

        from .budget_hooks import budget_gate, budget_review_section

        register_decision_gate(budget_gate)
        register_review_section(budget_review_section)

from django.apps import AppConfig


class ChargebackConfig(AppConfig):
    name = "chargeback"
    verbose_name = "Metering and chargeback"

    def ready(self):
        from portal.metrics import register_all

        from .metrics import COLLECTORS

        register_all(COLLECTORS)

        from intake.hooks import register_decision_gate, register_preview_section, register_review_section

        from .budget_hooks import budget_gate, budget_gate_reads, budget_review_section
        from .cost_preview import cost_preview_section

        register_decision_gate(budget_gate, reads=budget_gate_reads)
        register_review_section(budget_review_section)
        register_preview_section(cost_preview_section)

        from intake import hooks

        from .idle.selectors import rightsizing_get

        # The request page shows the right-sizing suggestion (intake, the layer below, asks for it); the API action
        # is chargeback's own (api/request_views.py).
        hooks.request_rightsizing.provide(rightsizing_get)
        from .request_usage import request_usage_so_far

        hooks.request_usage.provide(request_usage_so_far)

from django.apps import AppConfig


class ChargebackConfig(AppConfig):
    name = "chargeback"
    verbose_name = "Metering and chargeback"

    def ready(self):
        from portal.metrics import register_all

        from .metrics import COLLECTORS

        register_all(COLLECTORS)

        from intake.hooks import register_decision_gate

        from .budget_hooks import budget_gate, budget_gate_reads

        # A budget's forecast may hold a rule's automatic approval (the decision is intake's, the layer below). The
        # review page's budget section, the preview's cost and the request page's usage and right-sizing are read
        # by the workflows above, directly (workflows.selectors).
        register_decision_gate(budget_gate, reads=budget_gate_reads)

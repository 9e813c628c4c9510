from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Clusters, inventory and provisioning"

    def ready(self):
        from intake import hooks
        from intake.choices import RequestStatus
        from portal.metrics import register_all

        from .metrics import COLLECTORS
        from .selectors import inventory_generation, inventory_snapshot, request_fit
        from .services import allocation_on_approved, allocation_on_cancelled

        register_all(COLLECTORS)
        # The request state machine (intake, the layer below) announces statuses; provisioning acts on them.
        hooks.on_entering(RequestStatus.APPROVED, "provisioning.apply", allocation_on_approved)
        hooks.on_entering(RequestStatus.CANCELLED, "provisioning.teardown", allocation_on_cancelled)
        # ...and supplies the inventory its decision places on.
        hooks.inventory_snapshot.provide(inventory_snapshot)
        hooks.inventory_generation.provide(inventory_generation)
        hooks.request_fit.provide(request_fit)

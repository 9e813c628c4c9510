from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Clusters, inventory and provisioning"

    def ready(self):
        from intake import hooks
        from portal.metrics import register_all
        from portal.models import Notice
        from portal.outbox import outbox_register

        from .metrics import COLLECTORS
        from django.db.models import Prefetch

        from .models import AppliedObject, GangStall, ProvisioningJob
        from .selectors import inventory_generation, inventory_snapshot, team_quota_state
        from .sweeps import allocation_sweep_now

        register_all(COLLECTORS)
        # Its outbox is swept with every other (portal.outbox); stalled-gang notices are portal notices.
        outbox_register("provisioning_jobs", allocation_sweep_now)
        # The decision (intake, the layer below) places on provisioning's inventory and holds automatic approval
        # against the team's quota. (The workflows above call provisioning directly: workflows.services.)
        hooks.inventory_snapshot.provide(inventory_snapshot)
        hooks.inventory_generation.provide(inventory_generation)
        hooks.team_quota_state.provide(team_quota_state)
        # A request is shown with what provisioning did for it.
        hooks.request_shown_with("applied_objects", lambda: AppliedObject.objects.order_by("id"))
        hooks.request_shown_with("provisioning_jobs",
                                 lambda: ProvisioningJob.objects.select_related("cluster").order_by("id"))
        # status reconciliation: the gang's stalls, newest first, with their notices
        hooks.request_shown_with("gang_stalls", lambda: GangStall.objects.select_related("cluster").prefetch_related(
            Prefetch("notices", queryset=Notice.objects.order_by("id"))).order_by("-started_at", "-id"))

from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Clusters, inventory and provisioning"

    def ready(self):
        from intake import hooks
        from intake.choices import RequestStatus
        from portal.metrics import register_all
        from portal.models import Notice
        from portal.outbox import outbox_register

        from .metrics import COLLECTORS
        from django.db.models import Prefetch

        from .models import AppliedObject, GangStall, ProvisioningJob
        from .preview import preview_objects
        from .selectors import inventory_generation, inventory_snapshot, request_fit, request_wait, team_quota_state
        from .services import allocation_on_approved, allocation_on_cancelled
        from .sweeps import allocation_sweep_now

        register_all(COLLECTORS)
        # Its outbox is swept with every other (portal.outbox); stalled-gang notices are portal notices.
        outbox_register("provisioning_jobs", allocation_sweep_now)
        # The request state machine (intake, the layer below) announces statuses; provisioning acts on them.
        hooks.on_entering(RequestStatus.APPROVED, "provisioning.apply", allocation_on_approved)
        hooks.on_entering(RequestStatus.CANCELLED, "provisioning.teardown", allocation_on_cancelled)
        # ...and supplies the inventory its decision places on.
        hooks.inventory_snapshot.provide(inventory_snapshot)
        hooks.inventory_generation.provide(inventory_generation)
        hooks.request_fit.provide(request_fit)
        hooks.request_wait.provide(request_wait)
        hooks.team_quota_state.provide(team_quota_state)
        hooks.preview_objects.provide(preview_objects)
        from .selectors.access import request_access
        from .selectors.admission import admission_review_section

        hooks.request_access.provide(request_access)
        hooks.register_review_section(admission_review_section)
        # A request is shown with what provisioning did for it.
        hooks.request_shown_with("applied_objects", lambda: AppliedObject.objects.order_by("id"))
        hooks.request_shown_with("provisioning_jobs",
                                 lambda: ProvisioningJob.objects.select_related("cluster").order_by("id"))
        # status reconciliation: the gang's stalls, newest first, with their notices
        hooks.request_shown_with("gang_stalls", lambda: GangStall.objects.select_related("cluster").prefetch_related(
            Prefetch("notices", queryset=Notice.objects.order_by("id"))).order_by("-started_at", "-id"))

from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Teams and people"

    def ready(self):
        from . import checks  # noqa: F401 - registers the system checks
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from .metrics import register
        from .metrics_portal import worker_heartbeat
        from .notices import notices_sweep
        from .outbox import outbox_register
        from .services import token_guard_password_change

        register("portal.worker_heartbeat", worker_heartbeat)
        outbox_register("portal_notices", notices_sweep)
        pre_save.connect(token_guard_password_change, sender=get_user_model(),
                         dispatch_uid="portal.token_guard_password_change")

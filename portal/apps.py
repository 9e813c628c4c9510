from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Teams and people"

    def ready(self):
        from . import checks  # noqa: F401 - registers the system checks
        from .metrics import register
        from .metrics_portal import worker_heartbeat

        register("portal.worker_heartbeat", worker_heartbeat)

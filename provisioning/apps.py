from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "provisioning"
    verbose_name = "Clusters, inventory and provisioning"

    def ready(self):
        from portal.metrics import register

        from .metrics import COLLECTORS

        for name, collector in COLLECTORS.items():
            register(name, collector)

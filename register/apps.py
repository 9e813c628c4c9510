from django.apps import AppConfig


class RegisterConfig(AppConfig):
    """The platform decision register: a read model across the apps (policy, inventory, running work,
    chargeback), plus the few platform decisions that had nowhere to be recorded."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "register"
    verbose_name = "Platform decision register"

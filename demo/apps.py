from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Installed only for its `load_demo` command; it has no models."""

    name = "demo"
    verbose_name = "Demo data"

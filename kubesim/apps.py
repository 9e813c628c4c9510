from django.apps import AppConfig


class KubesimConfig(AppConfig):
    """Only so that `manage.py simulate_cluster` exists: kubesim has no models, and nothing imports it on load."""

    name = "kubesim"
    verbose_name = "Simulated cluster"

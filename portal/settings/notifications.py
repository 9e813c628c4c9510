"""E-mail and webhooks (notices to teams), and lease reminders.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

from .base import DEBUG, env_bool, env_list

# Notifications: e-mail through Django's mail backend, webhooks as a JSON POST (both from Celery tasks).
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "20"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "gpu-portal@localhost")
PLATFORM_NOTIFICATION_EMAIL = env_list("PLATFORM_NOTIFICATION_EMAIL", "")
PORTAL_WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_WEBHOOK_TIMEOUT_SECONDS", "10"))
PORTAL_LEASE_REMINDER_HOURS = float(os.environ.get("PORTAL_LEASE_REMINDER_HOURS", "24"))

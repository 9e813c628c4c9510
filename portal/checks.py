"""System checks for settings that cannot be checked when settings load (collectstatic must run without them)."""
from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=True)
def credential_keys_check(app_configs, **kwargs):
    if settings.PORTAL_CREDENTIAL_KEYS:
        from .encryption import keyring

        try:
            keyring()
        except Exception as exc:  # noqa: BLE001 - ImproperlyConfigured with the reason
            return [Error(str(exc), id="portal.E002")]
        return []
    return [Error("PORTAL_CREDENTIAL_KEYS must be set when DEBUG is false: it encrypts cluster tokens and webhook "
                  "secrets", hint="comma-separated Fernet keys; docs/clusters-and-credentials.md",
                  id="portal.E001")]

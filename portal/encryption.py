"""Encryption at rest for secrets the portal must be able to read back (cluster tokens, webhook secrets).

Keys come from `PORTAL_CREDENTIAL_KEYS` (comma-separated Fernet keys). Every key decrypts; the first one encrypts,
so rotating is: put a new key first, keep the old ones after it, run `manage.py rotate_credential_keys`, then drop
the old keys. `EncryptedTextField` stores the Fernet token in a text column and hands plain text to Python.
"""
from __future__ import annotations

import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models


class UndecryptableSecret(Exception):
    """A stored secret that none of PORTAL_CREDENTIAL_KEYS decrypts (a key was removed too early)."""


@functools.lru_cache(maxsize=8)
def _multi_fernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured(
            "PORTAL_CREDENTIAL_KEYS is empty: set at least one Fernet key (python -c \"from cryptography.fernet "
            "import Fernet; print(Fernet.generate_key().decode())\")"
        )
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(f"PORTAL_CREDENTIAL_KEYS holds a key that is not a Fernet key: {exc}") from None


def keyring() -> MultiFernet:
    # Keyed on the setting's value so tests (and a reload) that change the keys get a matching keyring.
    return _multi_fernet(tuple(settings.PORTAL_CREDENTIAL_KEYS))


def encrypt(plain: str) -> str:
    return keyring().encrypt(plain.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return keyring().decrypt(token.encode()).decode()
    except InvalidToken:
        raise UndecryptableSecret(
            "a stored secret cannot be decrypted with any key of PORTAL_CREDENTIAL_KEYS; put back the key it was "
            "written with, or set the secret again"
        ) from None


class EncryptedTextField(models.TextField):
    """Text encrypted with `encrypt()` in the database; "" is stored as "" (nothing to hide, and queryable)."""

    description = "Text encrypted at rest with PORTAL_CREDENTIAL_KEYS"

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        return decrypt(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value
        return encrypt(value)

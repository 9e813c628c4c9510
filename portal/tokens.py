"""API token secrets: how they are made, and the one-way digest the database keeps instead of them."""
from __future__ import annotations

import hashlib
import secrets

# Marks the portal's tokens in logs and secret scanners; the rest is 32 random bytes (256 bits).
TOKEN_MARK = "gpp_"
PREFIX_LENGTH = 12


def token_generate() -> str:
    return TOKEN_MARK + secrets.token_urlsafe(32)


def token_digest(clear: str) -> str:
    # A plain SHA-256 suffices: the secret is random and long, so there is nothing to guess from the digest
    # (slow password hashes defend low-entropy secrets, and would cost every API request).
    return hashlib.sha256(clear.encode()).hexdigest()


def token_prefix(clear: str) -> str:
    return clear[:PREFIX_LENGTH]

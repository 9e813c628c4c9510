"""Team webhooks: their signing secret, the signature every body carries, and delivery through the outbound policy.

Each POST carries `X-Portal-Signature: t=<unix seconds>,v1=<hex>`, where the hex is
HMAC-SHA256(team secret, f"{t}.{body}") over the exact bytes sent. A receiver recomputes it with the secret the
team was shown, compares in constant time and rejects timestamps older than a few minutes (replays). The scheme
is the one Stripe documents for its webhooks ("Verify webhook signatures manually"), so receivers can reuse
existing verification code. docs/clusters-and-credentials.md has a receiver in Python.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

import urllib3
from django.conf import settings

from .outbound import WEBHOOK, OutboundBlocked, check_url, post_pinned

SIGNATURE_HEADER = "X-Portal-Signature"
SIGNATURE_VERSION = "v1"
SECRET_PREFIX = "whsec_"  # makes a leaked secret recognisable to secret scanners


def secret_generate() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature_header(secret: str, body: bytes, *, timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    return f"t={timestamp},{SIGNATURE_VERSION}={signature(secret, timestamp, body)}"


class WebhookFailed(Exception):
    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class WebhookDelivery:
    url: str
    body: bytes
    headers: dict[str, str]


def webhook_request(*, url: str, body: bytes, secret: str, headers: dict[str, str]) -> WebhookDelivery:
    signed = {"Content-Type": "application/json", "User-Agent": "gpu-portal-webhook/1", **headers}
    if secret:
        signed[SIGNATURE_HEADER] = signature_header(secret, body)
    return WebhookDelivery(url=url, body=body, headers=signed)


def webhook_post(delivery: WebhookDelivery) -> int:
    """POST once, to the address the URL was checked to resolve to, following no redirect. Returns the status;
    raises WebhookFailed (transient for timeouts, 408/409/425/429 and 5xx)."""
    try:
        destination = check_url(delivery.url, purpose=WEBHOOK)
    except OutboundBlocked as exc:
        raise WebhookFailed(f"the webhook URL is not called: {exc}", transient=False) from None
    try:
        response = post_pinned(destination, body=delivery.body, headers=delivery.headers,
                               timeout=settings.PORTAL_WEBHOOK_TIMEOUT_SECONDS)
    except (urllib3.exceptions.HTTPError, OSError) as exc:  # refused, reset, timed out, TLS failures
        raise WebhookFailed(f"could not reach the webhook: {type(exc).__name__}: {exc}", transient=True) from exc
    if 300 <= response.status < 400:
        raise WebhookFailed(f"the webhook answered HTTP {response.status} (a redirect, which is never followed)",
                            transient=False)
    if response.status in (408, 409, 425, 429) or response.status >= 500:
        raise WebhookFailed(f"the webhook answered HTTP {response.status}", transient=True)
    if response.status >= 400:
        raise WebhookFailed(f"the webhook answered HTTP {response.status} {response.reason}", transient=False)
    return response.status

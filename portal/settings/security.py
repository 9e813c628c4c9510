"""Stored-secret keys, the Content-Security-Policy, sign-in protection, outbound networks, and the switches only
production has (DEBUG off).

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import base64
import hashlib
import os

from .base import DEBUG, SECRET_KEY, env_bool, env_list

# Keys encrypting stored secrets (cluster tokens, webhook secrets): comma-separated Fernet keys, the first one
# encrypts, all decrypt (rotation: docs/clusters-and-credentials.md). Derived from SECRET_KEY only while DEBUG is on;
# with DEBUG off and no keys, `check --deploy` fails and storing or reading a secret raises (collectstatic works).
PORTAL_CREDENTIAL_KEYS = env_list("PORTAL_CREDENTIAL_KEYS", "")
if not PORTAL_CREDENTIAL_KEYS and DEBUG:
    _digest = hashlib.sha256(b"gpu-portal credential encryption\0" + SECRET_KEY.encode()).digest()
    PORTAL_CREDENTIAL_KEYS = [base64.urlsafe_b64encode(_digest).decode()]
# Content-Security-Policy of every response (portal.middleware; docs/security.md). Empty: no header.
PORTAL_CONTENT_SECURITY_POLICY = os.environ.get(
    "PORTAL_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)
# --- sign-in protection (django-axes, portal.signin; docs/security.md) ---
# Failed password sign-ins allowed (portal login, admin login) before further attempts are refused, until
# PORTAL_LOGIN_LOCKOUT_SECONDS have passed since the last failure: per username from one client address. The wider
# counts (per username from anywhere, per address for any username) are off unless set: each lets someone lock
# out people who did nothing wrong (a colleague's account; everyone behind one address).
PORTAL_LOGIN_MAX_FAILURES = int(os.environ.get("PORTAL_LOGIN_MAX_FAILURES", "5"))
PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = int(os.environ.get("PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT", "0"))
PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = int(os.environ.get("PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS", "0"))
PORTAL_LOGIN_LOCKOUT_SECONDS = int(os.environ.get("PORTAL_LOGIN_LOCKOUT_SECONDS", "900"))
PORTAL_TRUSTED_PROXIES = env_list("PORTAL_TRUSTED_PROXIES", "")
AXES_HANDLER = "portal.signin.SignInHandler"
# Lockouts are reset with `manage.py axes_reset` (docs/security.md); the admin keeps to the portal's own models,
# whose actions are each checked against the role their service checks (tests/test_admin_actions.py).
AXES_ENABLE_ADMIN = False
AXES_FAILURE_LIMIT = "portal.signin.failure_limit"
AXES_COOLOFF_TIME = "portal.signin.cool_off"
# Three counts, each with its own limit (portal.signin.SignInHandler): username and address, username, address.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "portal.signin.client_address"
AXES_USERNAME_CALLABLE = "portal.signin.username_of"
AXES_WHITELIST_CALLABLE = "portal.signin.not_a_password_attempt"
AXES_LOCKOUT_CALLABLE = "portal.signin.lockout_response"
# --- end sign-in protection ---
# Outbound calls to addresses people enter (portal.outbound): loopback, link-local, private and reserved ranges are
# denied unless listed. This list is for the clusters' API servers and their Prometheus (CIDRs, comma-separated:
# on-premises API servers); the deny list adds ranges for every call and wins over the allow lists.
PORTAL_OUTBOUND_ALLOWED_NETWORKS = env_list("PORTAL_OUTBOUND_ALLOWED_NETWORKS", "")
PORTAL_OUTBOUND_DENIED_NETWORKS = env_list("PORTAL_OUTBOUND_DENIED_NETWORKS", "")
PORTAL_WEBHOOK_ALLOWED_NETWORKS = env_list("PORTAL_WEBHOOK_ALLOWED_NETWORKS", "")
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"

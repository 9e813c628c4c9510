"""OpenID Connect single sign-on (portal.oidc).

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

from .base import env_bool

# --- Identity: OpenID Connect single sign-on (portal.oidc) ------------------------------------------------------
# Enabled when a client id and a provider (discovery URL, or the explicit endpoints) are set. Local accounts keep
# working beside it (bootstrap, break-glass).
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_DISCOVERY_URL = os.environ.get("OIDC_OP_DISCOVERY_URL", "")
# Explicit endpoints win over discovery; leave empty to discover them.
OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
OIDC_TOKEN_USE_BASIC_AUTH = env_bool("OIDC_TOKEN_USE_BASIC_AUTH", False)
OIDC_TIMEOUT = int(os.environ.get("OIDC_TIMEOUT", "10"))
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
OIDC_ROLE_GROUPS = os.environ.get("OIDC_ROLE_GROUPS", "platform=gpu-platform,finance=gpu-finance,engineer=gpu-users")
OIDC_TEAM_GROUP_PREFIX = os.environ.get("OIDC_TEAM_GROUP_PREFIX", "gpu-team-")
OIDC_LINK_VERIFIED_EMAIL = env_bool("OIDC_LINK_VERIFIED_EMAIL", False)
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID and (OIDC_OP_DISCOVERY_URL or OIDC_OP_AUTHORIZATION_ENDPOINT))
# portal.signin's gate first: a locked-out username and address never reach the password check.
AUTHENTICATION_BACKENDS = [
    "portal.signin.SignInBackend",
    "django.contrib.auth.backends.ModelBackend",
    "portal.oidc.PortalOIDCBackend",
]
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"
# --- end of identity settings ------------------------------------------------------------------------------------

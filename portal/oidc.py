"""OpenID Connect single sign-on (authorization code flow with PKCE), on top of mozilla-django-oidc.

Enabled only when `OIDC_RP_CLIENT_ID` and a provider (`OIDC_OP_DISCOVERY_URL`, or the explicit endpoints) are
configured; local accounts keep working beside it. What this module adds to the library:

- discovery: endpoints, JWKS and issuer come from the provider's `/.well-known/openid-configuration` unless set
  explicitly (the library only knows explicit settings);
- stricter id_token checks: audience must contain our client id and the issuer must be the provider's (the
  library verifies the signature, expiry and nonce only);
- identity mapping: the id_token's issuer and subject find the portal account (never a user name or an e-mail
  the provider lets people choose), and a group claim becomes its role and team memberships
  (`identity_from_claims`, written by `portal.services.user_sign_on`);
- nothing is read from the provider until single sign-on is used, so password sign-ins work while it is down;
- failures end on the login page with a sentence of ours saying what went wrong, never with a 400 page.
"""
from __future__ import annotations

import hashlib
import logging
import re

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import IntegrityError
from django.http import Http404
from django.shortcuts import redirect
from django.urls import path
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from .choices import Role
from .errors import DomainError
from .roles import ROLE_ORDER
from .services import SignOn, user_sign_on

logger = logging.getLogger(__name__)

SSO_ERROR_SESSION_KEY = "portal_sso_error"
DISCOVERY_CACHE_SECONDS = 3600
# Settings that may come from the discovery document, and the document's key for each.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_ISSUER": "issuer",
}
USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}$")
# The `error` codes an authorization response may carry (RFC 6749 section 4.1.2.1; OpenID Connect Core 1.0,
# section 3.1.2.6), each with what the login page says.
PROVIDER_ERRORS = {
    "access_denied": "The identity provider refused the sign-in, or it was cancelled.",
    "login_required": "The identity provider needs you to sign in there first; start again.",
    "interaction_required": "The identity provider needs you to confirm something there first; start again.",
    "consent_required": "The identity provider needs your consent for the portal first; start again.",
    "account_selection_required": "The identity provider needs you to pick an account first; start again.",
    "temporarily_unavailable": "The identity provider is unavailable for now; try again later.",
    "server_error": "The identity provider had an error; try again later.",
}
PROVIDER_ERROR_OTHER = ("The identity provider refused the sign-in request (a configuration problem: the platform "
                        "team can see the provider's error in its logs).")


class IdentityRejected(Exception):
    """The provider vouched for the person, but the portal has no place for them (the message says why)."""


class AnswerUnverified(Exception):
    """The provider's answer failed a check (signature, nonce, audience, issuer, expiry, userinfo subject)."""


# --- configuration -------------------------------------------------------------------------------------------------


def oidc_enabled() -> bool:
    return bool(getattr(settings, "OIDC_ENABLED", False))


def discovery_document() -> dict:
    """The provider's discovery document, cached for an hour in the shared cache; {} without a discovery URL."""
    url = getattr(settings, "OIDC_OP_DISCOVERY_URL", "")
    if not url:
        return {}
    key = "oidc:discovery:" + hashlib.sha256(url.encode()).hexdigest()
    document = cache.get(key)
    if document is None:
        response = requests.get(url, timeout=getattr(settings, "OIDC_TIMEOUT", 10))
        response.raise_for_status()
        document = response.json()
        expected_issuer = url.removesuffix("/.well-known/openid-configuration").rstrip("/")
        # OpenID Connect Discovery 1.0, section 4.3: the issuer must be the URL the document was fetched under.
        if document.get("issuer", "").rstrip("/") != expected_issuer:
            raise ImproperlyConfigured(
                f"OIDC discovery at {url} names issuer {document.get('issuer')!r}, expected {expected_issuer!r}"
            )
        cache.set(key, document, DISCOVERY_CACHE_SECONDS)
    return document


def oidc_setting(attr: str, *default):
    """mozilla-django-oidc's `get_settings`, completed from the discovery document for the endpoints."""
    if attr in DISCOVERED and not getattr(settings, attr, ""):
        value = discovery_document().get(DISCOVERED[attr])
        if value:
            return value
        if default:
            return default[0]
        raise ImproperlyConfigured(f"{attr} is not set and no discovery document provides {DISCOVERED[attr]}")
    return import_from_settings(attr, *default)


def parse_role_groups(text: str) -> dict[str, set[str]]:
    """`"platform=gpu-platform,engineer=gpu-users,engineer=ml"` -> {role: {group, ...}}."""
    mapping: dict[str, set[str]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        role, sep, group = item.partition("=")
        role, group = role.strip(), group.strip()
        if not sep or role not in Role.values or not group:
            raise ImproperlyConfigured(
                f"OIDC_ROLE_GROUPS entry {item!r}: write role=group with role one of {', '.join(Role.values)}"
            )
        mapping.setdefault(role, set()).add(group)
    return mapping


# --- identity mapping ----------------------------------------------------------------------------------------------


def _groups(claims: dict, claim: str) -> set[str]:
    value = claims.get(claim) or []
    if isinstance(value, str):
        value = [value]
    # Keycloak sends full paths ("/gpu-team-vision") when "full group path" is on.
    return {str(group).lstrip("/") for group in value if group}


def identity_from_claims(
    claims: dict, *, groups_claim: str, username_claim: str, role_groups: dict[str, set[str]], team_prefix: str
) -> SignOn:
    """Who the claims say this is: the issuer and subject that identify them (the link to a portal account), the
    user name a new account would get, the highest role a group grants and the teams the groups name.

    Team groups (`<prefix><slug>`) name teams the platform team created; unknown slugs are kept here and dropped
    by the service, so an identity provider can never create a cost centre.
    """
    subject = str(claims.get("sub") or "")
    if not subject or len(subject) > 255:
        raise IdentityRejected("The identity provider's answer has no usable subject (`sub`).")
    username = str(claims.get(username_claim) or subject)
    if not USERNAME_RE.fullmatch(username):
        raise IdentityRejected(
            f"The identity provider's {username_claim!r} claim ({username!r}) is not a usable user name."
        )
    groups = _groups(claims, groups_claim)
    role = next((r.value for r in ROLE_ORDER if groups & role_groups.get(r.value, set())), None)
    if role is None:
        wanted = ", ".join(sorted(g for gs in role_groups.values() for g in gs))
        raise IdentityRejected(
            f"Your account is in none of the portal's groups ({wanted}); ask the platform team for access."
        )
    teams = tuple(sorted(g.removeprefix(team_prefix) for g in groups if team_prefix and g.startswith(team_prefix)))
    # A JSON boolean, or a string for some providers (Amazon Cognito's "true"); absent: neither said.
    said = str(claims.get("email_verified")).lower()
    verified, unverified = said == "true", said == "false"
    return SignOn(
        issuer=str(claims.get("iss") or ""),
        subject=subject,
        username=username,
        role=role,
        team_slugs=teams,
        email="" if unverified else str(claims.get("email") or "")[:254],
        email_verified=verified,
        first_name=str(claims.get("given_name") or "")[:150],
        last_name=str(claims.get("family_name") or "")[:150],
    )


# --- backend ----------------------------------------------------------------------------------------------------


def _fail(request, message: str) -> None:
    if request is not None and hasattr(request, "session"):
        request.session[SSO_ERROR_SESSION_KEY] = message


class PortalOIDCBackend(OIDCAuthenticationBackend):
    """Always listed in AUTHENTICATION_BACKENDS, and so built by Django for every password sign-in and for every
    request of a user who signed on: it reads no provider setting (no discovery document) until it handles a
    callback, so a provider that is down or misconfigured never fails anything but single sign-on itself."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):
        self.enabled = oidc_enabled()
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        # Only the callback of the code flow (a `code` in the query) is ours; password logins go to ModelBackend.
        if not self.enabled or request is None or "code" not in request.GET:
            return None
        try:
            super().__init__()  # the library's settings: endpoints from discovery, keys, client
            return super().authenticate(request, **kwargs)
        except (IdentityRejected, DomainError) as exc:
            logger.warning("SSO login refused: %s", exc)
            _fail(request, str(exc))
        except (SuspiciousOperation, AnswerUnverified, jwt.InvalidTokenError) as exc:
            logger.warning("SSO login refused: the provider's answer did not verify: %s", exc)
            _fail(request, "Single sign-on failed: the identity provider's answer could not be verified.")
        except (requests.RequestException, ImproperlyConfigured, ValueError) as exc:
            logger.error("SSO login failed: the identity provider could not be used: %s", exc)
            _fail(request, "Single sign-on failed: the identity provider did not answer; try again later.")
        except IntegrityError as exc:  # the same identity's first sign-on twice at once: the other one won
            logger.warning("SSO login raced another: %s", exc)
            _fail(request, "Single sign-on did not complete; start again.")
        return None

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation(f"id_token audience {audience!r} does not include this client")
        issuer = oidc_setting("OIDC_OP_ISSUER", None)
        if issuer and payload.get("iss") != issuer:
            raise SuspiciousOperation(f"id_token issuer {payload.get('iss')!r} is not {issuer!r}")
        if "exp" not in payload:
            raise SuspiciousOperation("id_token has no expiry")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """The id_token's claims, completed by the userinfo endpoint (some providers put groups only there)."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            # OpenID Connect Core 1.0, section 5.3.2: the userinfo `sub` must be the id_token's.
            if userinfo.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("userinfo sub differs from the id_token's")
            claims.update(userinfo)
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        try:
            claims = self.get_userinfo(access_token, id_token, payload)
        except SuspiciousOperation as exc:  # the library would swallow it without a word
            raise AnswerUnverified(str(exc)) from exc
        # The link key comes from the verified id_token, whatever else the userinfo answer says.
        claims.update(iss=payload.get("iss"), sub=payload.get("sub"))
        sign_on = identity_from_claims(
            claims,
            groups_claim=settings.OIDC_GROUPS_CLAIM,
            username_claim=settings.OIDC_USERNAME_CLAIM,
            role_groups=parse_role_groups(settings.OIDC_ROLE_GROUPS),
            team_prefix=settings.OIDC_TEAM_GROUP_PREFIX,
        )
        if not sign_on.issuer:
            raise AnswerUnverified("id_token has no issuer")
        user = user_sign_on(sign_on=sign_on, link_verified_email=settings.OIDC_LINK_VERIFIED_EMAIL)
        logger.info("SSO login of %s as %s (teams: %s)", user.get_username(), sign_on.role,
                    ", ".join(sign_on.team_slugs) or "none")
        return user


# --- views ------------------------------------------------------------------------------------------------------


class OIDCAuthenticateView(OIDCAuthenticationRequestView):
    """Starts the code flow: redirects to the provider with state, nonce and a PKCE challenge."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):
        # The library's settings are read in get(): a provider that is down is then a message, not a 500.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            super().__init__()
        except (requests.RequestException, ImproperlyConfigured, ValueError) as exc:
            logger.error("SSO not started: the identity provider could not be used: %s", exc)
            _fail(request, "Single sign-on failed: the identity provider did not answer; try again later.")
            return redirect(settings.LOGIN_URL)
        return super().get(request)


class OIDCCallbackView(OIDCAuthenticationCallbackView):
    """The provider redirects back here with the code; a failure lands on the login page with the reason."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request):
        if not oidc_enabled():
            raise Http404("Single sign-on is not configured.")
        state = request.GET.get("state")
        if "code" in request.GET and state and state not in request.session.get("oidc_states", {}):
            # Not a sign-in this browser started (a replayed or stale link).
            _fail(request, "Single sign-on failed: this sign-in link is stale or was used already; start again.")
            return self.login_failure()
        try:
            return super().get(request)
        except SuspiciousOperation as exc:  # an unknown or replayed `state`
            logger.warning("SSO callback refused: %s", exc)
            _fail(request, "Single sign-on failed: this sign-in link is stale; start again.")
            return self.login_failure()

    def login_failure(self):
        if error := self.request.GET.get("error"):
            # A fixed sentence per error code: the query string is anyone's to write, so none of it is shown.
            logger.warning("SSO callback with error %r: %r", error[:100],
                           self.request.GET.get("error_description", "")[:300])
            _fail(self.request, PROVIDER_ERRORS.get(error, PROVIDER_ERROR_OTHER))
        elif SSO_ERROR_SESSION_KEY not in self.request.session:
            _fail(self.request, "Single sign-on did not complete.")
        return super().login_failure()


class LoginView(auth_views.LoginView):
    """Django's login page, offering "Sign in with SSO" when it is configured and saying why SSO failed."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sso_enabled"] = oidc_enabled()
        context["sso_error"] = self.request.session.pop(SSO_ERROR_SESSION_KEY, None)
        return context


urlpatterns = [
    path("authenticate/", OIDCAuthenticateView.as_view(), name="oidc_authentication_init"),
    path("callback/", OIDCCallbackView.as_view(), name="oidc_authentication_callback"),
]

"""Brute-force protection of every password sign-in (the portal's login page, the admin's), on django-axes.

django-axes counts failed `authenticate()` calls in the database (one row per username, address and user agent;
every web worker reads the same rows). Three counts are kept, each with its own limit, and reaching any one refuses
further attempts for PORTAL_LOGIN_LOCKOUT_SECONDS after the last failure:
- one username from one client address (PORTAL_LOGIN_MAX_FAILURES, 5): someone guessing one password;
- one username from anywhere (PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT, off unless set): guessing spread over many
  addresses, at the price that anyone can lock that account out;
- one client address, any username (PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS, off unless set): one password tried on
  many accounts, at the price that everyone behind that address (an office's NAT) is locked out.
So by default a lockout is by account and address together: guessing from one address locks that account for
that address only. The client address is the connection's, or what a configured proxy says it saw.
This module holds the callables the AXES_* settings name: limits read at request time, the client address, which
attempts count, the handler that applies the three limits, and the 429 page that keeps the sign-in form and says
how long to wait. docs/security.md describes the settings.
"""
from __future__ import annotations

import ipaddress
from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpResponse
from django.template.response import TemplateResponse

REFUSED_FLAG = "portal_signin_refused"


def failure_limit(request, credentials) -> int:
    return settings.PORTAL_LOGIN_MAX_FAILURES


def failure_limits() -> list[int]:
    """The limit of each count, in the order of settings.AXES_LOCKOUT_PARAMETERS (username and address, username,
    address); 0 turns a wider count off."""
    return [settings.PORTAL_LOGIN_MAX_FAILURES, settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT,
            settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS]


class SignInHandler(AxesDatabaseHandler):
    """Axes' database handler with one limit per count instead of one limit for all.

    Axes compares a single number with AXES_FAILURE_LIMIT (the username-and-address limit). This handler reports
    that limit as reached when any count has reached its own limit, and otherwise the username-and-address count
    (which is never above the wider ones), so axes' own lockout logic and messages stay as they are.
    """

    def get_failures(self, request, credentials=None) -> int:
        limits = failure_limits()
        counts = [attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
                  for attempts in self.get_user_attempts(request, credentials)]
        if any(limit and count >= limit for count, limit in zip(counts, limits)):
            return max(limits[0], counts[0])
        return counts[0]

    def reset_user_attempts(self, request, credentials=None) -> int:
        """A successful sign-in clears that account's failures only.

        Axes would also clear every failure from the client's address, so an attacker with one working account
        could sign in between rounds of guessing at others and never reach the per-address limit.
        """
        username = username_of(request, credentials)
        deleted, _ = AccessAttempt.objects.filter(username=username).delete()
        return deleted


def cool_off(request) -> timedelta:
    return timedelta(seconds=settings.PORTAL_LOGIN_LOCKOUT_SECONDS)


def lockout_message() -> str:
    minutes = max(1, round(settings.PORTAL_LOGIN_LOCKOUT_SECONDS / 60))
    return f"Too many failed sign-ins. Try again in {minutes} minute{'s' if minutes != 1 else ''}."


def _address(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, unless the connection comes from a trusted proxy (PORTAL_TRUSTED_PROXIES);
    then X-Forwarded-For read from the right, past every trusted proxy, to the first address they did not write.

    Anything left of that entry comes from the client and could be forged, so it is never used; a header from a
    connection that is not a trusted proxy is not believed at all.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    trusted = [ipaddress.ip_network(net, strict=False) for net in settings.PORTAL_TRUSTED_PROXIES]
    if not trusted:
        return remote

    def is_proxy(address) -> bool:
        return address is not None and any(address in net for net in trusted)

    if not is_proxy(_address(remote)):
        return remote
    hops = [hop for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return remote  # not an address a proxy of ours writes: nothing further left can be believed
        if not is_proxy(address):
            return str(address)
    return str(_address(hops[0])) if hops else remote


def username_of(request, credentials) -> str | None:
    # Case and surrounding blanks do not make another account to guess at.
    username = (credentials or {}).get("username")
    if username is None and request is not None and hasattr(request, "POST"):
        username = request.POST.get("username")
    return username.strip().lower() if isinstance(username, str) else username


def not_a_password_attempt(request, credentials) -> bool:
    """Sign-ins without a password (OpenID Connect callbacks) are the provider's to throttle, not ours: they are
    neither counted nor refused."""
    return credentials is not None and not credentials.get("password")


class SignInBackend(AxesStandaloneBackend):
    """Axes' gate, first of AUTHENTICATION_BACKENDS: refuses a locked-out username and address.

    Without a request there is no client to count (a shell, `Client.login` in tests): those calls pass through
    to the real backends.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        try:
            return super().authenticate(request, username=username, password=password, **kwargs)
        except AxesBackendPermissionDenied:
            setattr(request, REFUSED_FLAG, True)
            raise


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """The answer to a sign-in that axes flags as locked out.

    The failure that reaches the limit is answered like any failure (its page says the password was wrong); the
    attempts after it, refused without checking the password, get 429 and the sign-in form saying how long to wait.
    """
    if not getattr(request, REFUSED_FLAG, False) and original_response is not None:
        return original_response
    message = lockout_message()
    context = getattr(original_response, "context_data", None) or {}
    form = context.get("form")
    if form is None or not isinstance(original_response, TemplateResponse):
        return HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
    # The form's only error is "wrong username or password", which would be misleading here: the password was
    # never checked.
    form.errors.clear()
    form.add_error(None, message)
    response = TemplateResponse(request, original_response.template_name, context, status=429)
    return response.render()

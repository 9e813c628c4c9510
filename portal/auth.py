"""The sign-in page (with SSO when configured, see portal.oidc), with a brake: after too many failed attempts for one username from one address, further attempts
are refused for a while (counted in the shared cache, so every web worker agrees)."""
from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.core.cache import cache

from .oidc import LoginView

logger = logging.getLogger(__name__)


def _key(request, username: str) -> str:
    ident = request.META.get("REMOTE_ADDR", "") + "|" + username.strip().lower()
    return "login-failures:" + hashlib.sha256(ident.encode()).hexdigest()[:32]


def _failures(key: str) -> int:
    try:
        return cache.get(key) or 0
    except Exception as exc:  # noqa: BLE001 - the cache (Redis) is down: sign-in still works, unthrottled
        logger.warning("login throttling skipped, cache unavailable: %s", exc)
        return 0


class ThrottledLoginView(LoginView):
    def post(self, request, *args, **kwargs):
        key = _key(request, request.POST.get("username", ""))
        if _failures(key) >= settings.PORTAL_LOGIN_MAX_FAILURES:
            form = self.get_form()
            form.add_error(None, f"Too many failed sign-ins. Try again in "
                                 f"{settings.PORTAL_LOGIN_LOCKOUT_SECONDS // 60} minutes.")
            response = self.render_to_response(self.get_context_data(form=form))
            response.status_code = 429
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        key = _key(self.request, self.request.POST.get("username", ""))
        try:
            cache.add(key, 0, settings.PORTAL_LOGIN_LOCKOUT_SECONDS)
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, settings.PORTAL_LOGIN_LOCKOUT_SECONDS)
        except Exception as exc:  # noqa: BLE001
            logger.warning("could not count a failed sign-in, cache unavailable: %s", exc)
        return super().form_invalid(form)

    def form_valid(self, form):
        try:
            cache.delete(_key(self.request, self.request.POST.get("username", "")))
        except Exception as exc:  # noqa: BLE001
            logger.warning("could not reset failed sign-ins, cache unavailable: %s", exc)
        return super().form_valid(form)

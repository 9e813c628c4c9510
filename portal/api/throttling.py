"""API rate limiting per token (per session user when no token), in the shared cache so every web worker counts
together. Rates come from settings at request time, so they can be tuned per deployment."""
import logging

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle


logger = logging.getLogger(__name__)


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_rate(self):
        return settings.PORTAL_API_RATE

    def allow_request(self, request, view):
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # noqa: BLE001 - the cache (Redis) is down
            # Fail open: an unavailable rate counter must not turn every API call into a 500.
            logger.warning("rate limiting skipped, cache unavailable: %s", exc)
            return True

    def get_cache_key(self, request, view):
        auth = getattr(request, "auth", None)
        if auth is not None and getattr(auth, "key", None):
            return self.cache_format % {"scope": self.scope, "ident": f"token:{auth.key[:12]}"}
        if request.user and request.user.is_authenticated:
            return self.cache_format % {"scope": self.scope, "ident": f"user:{request.user.pk}"}
        return self.cache_format % {"scope": "anon", "ident": self.get_ident(request)}

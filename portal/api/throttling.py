"""API rate limiting per user, whichever token or session the call comes with (per address when anonymous): a user
holding several tokens shares one budget, so tokens are no way around the limit.

One counter per caller in Redis, shared by every web worker: a Lua script increments it and starts its window in
one atomic step, so concurrent requests can never read the same count and all pass (a read-then-write counter
let 1,701 of 3,000 simultaneous requests through a limit of 1,200). Fixed windows: the first request starts a
window of the rate's duration; when it ends the count starts again. Rates come from settings at request time, so
they can be tuned per deployment.
"""
from __future__ import annotations

import logging
import math

import redis
from django.conf import settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from portal.signin import client_address

logger = logging.getLogger(__name__)

# KEYS[1]: the counter; ARGV[1]: the window in milliseconds. Returns {count, milliseconds left in the window}.
# A counter found without an expiry (never expected) gets one, so no caller can be limited forever.
INCREMENT_IN_WINDOW = """
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
"""

_clients: dict[str, redis.Redis] = {}


def _redis() -> redis.Redis:
    url = settings.PORTAL_RATE_LIMIT_REDIS_URL
    if url not in _clients:
        # Short timeouts: a slow Redis must not hold API requests (the throttle fails open, see below).
        _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    return _clients[url]


class TokenRateThrottle(BaseThrottle):
    parse_rate = SimpleRateThrottle.parse_rate

    def __init__(self):
        self.retry_after: float | None = None

    def allow_request(self, request, view):
        limit, duration = self.parse_rate(settings.PORTAL_API_RATE)
        if limit is None:
            return True
        key = f"{settings.CACHES['default'].get('KEY_PREFIX', '')}:ratelimit:{self.ident(request)}"
        try:
            count, left_ms = _redis().eval(INCREMENT_IN_WINDOW, 1, key, int(duration * 1000))
        except redis.RedisError as exc:
            # Fail open: an unavailable rate counter must not turn every API call into a 500.
            logger.warning("rate limiting skipped, Redis unavailable: %s", exc)
            return True
        if count <= limit:
            return True
        self.retry_after = max(1, math.ceil(left_ms / 1000))
        return False

    def wait(self):
        return self.retry_after

    def ident(self, request) -> str:
        if request.user and request.user.is_authenticated:
            return f"user:{request.user.pk}"
        return f"anon:{client_address(request)}"

"""PostgreSQL and Redis (the cache; the broker is in `background`).

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

import dj_database_url

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpu_portal"),
        # Reuse connections but check them first, so a restarted PostgreSQL does not break workers.
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("CACHE_URL", REDIS_URL),
        "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "portal"),
    }
}

# A database that does not answer fails /readyz within the probe's timeout instead of hanging it.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
    "connect_timeout", int(os.environ.get("DB_CONNECT_TIMEOUT", "5")))

"""Django itself: the environment helpers, DEBUG and SECRET_KEY, hosts, apps, middleware, templates, static files.

Defaults are production's: DEBUG is off unless DEBUG=true (the quickstart scripts, scripts/demo and
scripts/test, set it), and then SECRET_KEY must be set. A deployment also sets ALLOWED_HOSTS, DATABASE_URL and
REDIS_URL. docs/security.md lists what holds by code and what by configuration. What each environment variable
means: portal/configuration_meanings.py (docs/configuration.md)."""

import importlib.util
import os
from pathlib import Path


BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
# The fallback key is only accepted while DEBUG is on; production must provide its own.
SECRET_KEY = os.environ.get("SECRET_KEY") or ("insecure-local-development-key" if DEBUG else "")
if not SECRET_KEY:
    raise RuntimeError("SECRET_KEY must be set when DEBUG is false")
# Keys anyone can read (.env.example's, the development fallback, Django's generated placeholders): a deployment
# that kept one signs its sessions and tokens with a public key, so it does not start.
KNOWN_EXAMPLE_SECRET_KEYS = frozenset({
    "change-me-to-a-long-random-string-of-at-least-fifty-characters-0123456789", "insecure-local-development-key",
})
if not DEBUG and (SECRET_KEY in KNOWN_EXAMPLE_SECRET_KEYS or SECRET_KEY.startswith(("change-me", "django-insecure-"))):
    raise RuntimeError("SECRET_KEY is a published example key (from .env.example or the documentation); set a "
                       "random one, e.g. python -c \"import secrets; print(secrets.token_urlsafe(50))\"")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's assets served by us, not fetched from a CDN
    "django_htmx",
    "axes",  # failed sign-ins and lockouts (portal.signin)
    "portal",
    "intake",
    "provisioning",
    "chargeback",
    "register",  # platform decision register
    "workflows",  # submit, preview, approve, cancel, lease expiry; the request API, pages and admin
    "demo",  # the quickstart's load_demo command; above every domain app
]
# The simulated cluster's `manage.py simulate_cluster` (docs/simulated-cluster.md), where its `sim` extra (kmock) is
# installed: the demo and the tests; a production image has no kmock, so no such command.
if importlib.util.find_spec("kmock") is not None:
    INSTALLED_APPS.append("kubesim")

MIDDLEWARE = [
    # First, so every response (redirects and errors too) carries X-Request-ID.
    "portal.request_context.RequestIdMiddleware",
    # Before the probes, so that every response carries the Content-Security-Policy.
    "portal.middleware.ContentSecurityPolicyMiddleware",
    # Probes and Prometheus reach pods by IP over HTTP: /healthz, /readyz and /metrics answer before the Host check.
    "portal.health.ProbeEndpointsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "portal.middleware.ApiBodySizeLimitMiddleware",
    "portal.middleware.AdminNulQueryMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out sign-in into portal.signin's 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", str(1024 * 1024)))
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.roles",
            ],
        },
    },
]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "web:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# One date format everywhere, the admin included (portal/formats/en/formats.py).
FORMAT_MODULE_PATH = ["portal.formats"]

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "portal" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

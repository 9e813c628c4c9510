"""Settings for the GPU Golden Path Portal, read from the environment.

Every value has a safe local default so that the quickstart works on a fresh machine; production sets
SECRET_KEY, DEBUG=false, ALLOWED_HOSTS, DATABASE_URL and REDIS_URL explicitly.
"""
import os
from pathlib import Path

import dj_database_url
from celery.schedules import crontab  # noqa: F401  (kept for schedules that want it)

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
# The fallback key is only accepted while DEBUG is on; production must provide its own.
SECRET_KEY = os.environ.get("SECRET_KEY") or ("insecure-local-development-key" if DEBUG else "")
if not SECRET_KEY:
    raise RuntimeError("SECRET_KEY must be set when DEBUG is false")
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
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "django_htmx",
    "portal",
    "intake",
    "provisioning",
    "chargeback",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "portal.urls"
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

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpu_portal"),
        # Reuse connections but check them first, so a restarted PostgreSQL does not break workers.
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("CACHE_URL", REDIS_URL),
        "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "portal"),
    }
}

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

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.StandardPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.exceptions.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Golden Path Portal API",
    "DESCRIPTION": "Describe a GPU workload, see the placement decision and why, request it, approve it.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
}

# Celery: work is dispatched after commit and acknowledged late, so a killed worker's task is redelivered.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# The one beat schedule of the project (STYLE.md: periodic schedules live here, nowhere else).
CELERY_BEAT_SCHEDULE: dict = {
    "provisioning-sweep": {"task": "provisioning.allocation_sweep", "schedule": 60.0},
}

# Where the GitOps applier keeps its repositories when a cluster does not name one.
PORTAL_DATA_DIR = Path(os.environ.get("PORTAL_DATA_DIR", BASE_DIR / "var"))
# Per-call timeout towards Kubernetes API servers, so no worker waits forever on a slow cluster.
PORTAL_KUBE_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_KUBE_TIMEOUT_SECONDS", "20"))
# First retry delay after a transient Kubernetes error; doubles per attempt (capped at 5 minutes).
PORTAL_KUBE_RETRY_BASE_SECONDS = float(os.environ.get("PORTAL_KUBE_RETRY_BASE_SECONDS", "5"))
# Prefix of the labels and annotations the portal writes on Kubernetes objects.
PORTAL_LABEL_DOMAIN = os.environ.get("PORTAL_LABEL_DOMAIN", "gpu-portal.io")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

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

# --- status reconciliation, stalled gangs and notifications (reconcile) ----------------------------------------
# Beat runs one reconciliation per cluster every interval: a LIST (first run, fallback) or a resumed WATCH,
# bounded well below the interval so runs never overlap (a per-cluster Redis lock makes sure of it).
PORTAL_RECONCILE_INTERVAL_SECONDS = float(os.environ.get("PORTAL_RECONCILE_INTERVAL_SECONDS", "60"))
PORTAL_RECONCILE_WATCH_SECONDS = int(os.environ.get("PORTAL_RECONCILE_WATCH_SECONDS", "45"))
# A worker re-lists pods from scratch at least this often, whatever its watch says (an informer's resync).
PORTAL_RECONCILE_RELIST_SECONDS = float(os.environ.get("PORTAL_RECONCILE_RELIST_SECONDS", "600"))
# A pod that cannot pull its image for this long fails its request (and its objects are removed).
PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS = int(
    os.environ.get("PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS", "600")
)
# A request with no pod at all for this long fails (queues such as Kueue hold suspended Jobs without pods); 0: never.
PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS = int(os.environ.get("PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS", "3600"))
# Used for a workload class that has no GangPolicy row (the data migration creates one per class).
PORTAL_GANG_STALL_AFTER_SECONDS = int(os.environ.get("PORTAL_GANG_STALL_AFTER_SECONDS", "900"))
CELERY_BEAT_SCHEDULE["provisioning-status-reconcile"] = {
    "task": "provisioning.status_reconcile_all",
    "schedule": PORTAL_RECONCILE_INTERVAL_SECONDS,
}

# Notifications: e-mail through Django's mail backend, webhooks as a JSON POST (both from Celery tasks).
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "20"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "gpu-portal@localhost")
# The platform team's address(es), copied on every stalled-gang notice; comma-separated, may be empty.
PLATFORM_NOTIFICATION_EMAIL = env_list("PLATFORM_NOTIFICATION_EMAIL", "")
PORTAL_WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_WEBHOOK_TIMEOUT_SECONDS", "10"))
# How the portal is reached from outside, for links in notifications.
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
# --- end status reconciliation ---------------------------------------------------------------------------------

# Kept whole: Django loads one settings module; it is sectioned by concern and docs/configuration.md is generated from it.
"""Settings for the GPU Golden Path Portal, read from the environment.

Defaults are production's: DEBUG is off unless DEBUG=true (the quickstart scripts, scripts/demo and
scripts/test, set it), and then SECRET_KEY must be set. A deployment also sets ALLOWED_HOSTS, DATABASE_URL and
REDIS_URL. docs/security.md lists what holds by code and what by configuration.
"""
import base64
import hashlib
import importlib.util
import os
from pathlib import Path

import dj_database_url

from portal.schedules import offset_schedule

BASE_DIR = Path(__file__).resolve().parent.parent


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
# Keys encrypting stored secrets (cluster tokens, webhook secrets): comma-separated Fernet keys, the first one
# encrypts, all decrypt (rotation: docs/clusters-and-credentials.md). Derived from SECRET_KEY only while DEBUG is on;
# with DEBUG off and no keys, `check --deploy` fails and storing or reading a secret raises (collectstatic works).
PORTAL_CREDENTIAL_KEYS = env_list("PORTAL_CREDENTIAL_KEYS", "")
if not PORTAL_CREDENTIAL_KEYS and DEBUG:
    _digest = hashlib.sha256(b"gpu-portal credential encryption\0" + SECRET_KEY.encode()).digest()
    PORTAL_CREDENTIAL_KEYS = [base64.urlsafe_b64encode(_digest).decode()]
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

# Content-Security-Policy of every response (portal.middleware; docs/security.md). Empty: no header.
PORTAL_CONTENT_SECURITY_POLICY = os.environ.get(
    "PORTAL_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)
ROOT_URLCONF = "portal.urls"
# Largest request body accepted (bytes); an answers object is a few kilobytes.
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

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON in, JSON out: one request shape per operation, documented exactly in the schema.
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["portal.api.throttling.TokenRateThrottle"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "portal.api.negotiation.StrictContentNegotiation",
    "DEFAULT_PAGINATION_CLASS": "portal.api.pagination.StandardPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["portal.api.filters.FilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api.exceptions.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Golden Path Portal API",
    "DESCRIPTION": "Describe a GPU workload, see the placement decision and why, request it, approve it.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs carry no team data: readable without signing in, like most public API docs.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.add_error_responses",
        "portal.api.schema.describe_document",
    ],
    # Paths are absolute (/api/v1/...), so the API is served from the schema's own origin.
    "SERVERS": [{"url": "/", "description": "the portal serving this schema"}],
    # faults: a request's `status` and `expected_status` are one choice set, under one name.
    "ENUM_NAME_OVERRIDES": {"RequestStatusEnum": "intake.choices.RequestStatus",
                            "CredentialSourceEnum": "provisioning.choices.CredentialSource",
                            "BudgetModeEnum": "chargeback.choices.BudgetMode"},
}

# Requests a user may make to the API, all their tokens and sessions together; DRF rate syntax, e.g. "600/min".
PORTAL_API_RATE = os.environ.get("PORTAL_API_RATE", "1200/min")
# API tokens a user may hold at once (neither revoked nor expired).
PORTAL_MAX_TOKENS_PER_USER = int(os.environ.get("PORTAL_MAX_TOKENS_PER_USER", "10"))
# Where the rate counters live (portal.api.throttling counts atomically in Redis): the cache's Redis by default.
PORTAL_RATE_LIMIT_REDIS_URL = os.environ.get("PORTAL_RATE_LIMIT_REDIS_URL", CACHES["default"]["LOCATION"])
# --- sign-in protection (django-axes, portal.signin; docs/security.md) ---
# Failed password sign-ins allowed (portal login, admin login) before further attempts are refused, until
# PORTAL_LOGIN_LOCKOUT_SECONDS have passed since the last failure: per username from one client address. The wider
# counts (per username from anywhere, per address for any username) are off unless set: each lets someone lock
# out people who did nothing wrong (a colleague's account; everyone behind one address).
PORTAL_LOGIN_MAX_FAILURES = int(os.environ.get("PORTAL_LOGIN_MAX_FAILURES", "5"))
PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = int(os.environ.get("PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT", "0"))
PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = int(os.environ.get("PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS", "0"))
PORTAL_LOGIN_LOCKOUT_SECONDS = int(os.environ.get("PORTAL_LOGIN_LOCKOUT_SECONDS", "900"))
# The reverse proxies in front of the portal (CIDRs; an ingress controller's pod network): X-Forwarded-For is read
# only on a connection from one of them, and only as far left as they wrote it. Empty: REMOTE_ADDR is the client.
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

# Celery: work is dispatched after commit and acknowledged late, so a killed worker's task is redelivered.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# --- faults: a dead worker's message goes to another worker after the visibility timeout; kombu only looks for
# such messages every unacked_restore_interval x unacked_restore_throttle seconds (100 s by default), so that
# period follows the timeout (a quarter of it, at most 100 s).
_visibility_timeout = int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _visibility_timeout,
    "unacked_restore_interval": max(1, min(100, _visibility_timeout // 4)),
    "unacked_restore_throttle": 1,
}
# --- end faults
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Where the GitOps applier keeps its repositories when a cluster does not name one.
PORTAL_DATA_DIR = Path(os.environ.get("PORTAL_DATA_DIR", BASE_DIR / "var"))
# Outbound calls to addresses people enter (portal.outbound): loopback, link-local, private and reserved ranges are
# denied unless listed. This list is for the clusters' API servers and their Prometheus (CIDRs, comma-separated:
# on-premises API servers); the deny list adds ranges for every call and wins over the allow lists.
PORTAL_OUTBOUND_ALLOWED_NETWORKS = env_list("PORTAL_OUTBOUND_ALLOWED_NETWORKS", "")
PORTAL_OUTBOUND_DENIED_NETWORKS = env_list("PORTAL_OUTBOUND_DENIED_NETWORKS", "")
# Team webhooks have their own list (engineers type them): never loopback, link-local or metadata addresses.
PORTAL_WEBHOOK_ALLOWED_NETWORKS = env_list("PORTAL_WEBHOOK_ALLOWED_NETWORKS", "")
# The portal's own pod identity (credential source "in_cluster", and reading Secrets for source "secret"): its
# API server (from the variables every pod gets) and the service-account files the kubelet keeps rotated.
_service_host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
_service_port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
PORTAL_IN_CLUSTER_SERVER = os.environ.get("PORTAL_IN_CLUSTER_SERVER") or (
    f"https://{'[' + _service_host + ']' if ':' in _service_host else _service_host}:{_service_port}"
    if _service_host else ""
)
PORTAL_IN_CLUSTER_TOKEN_FILE = os.environ.get(
    "PORTAL_IN_CLUSTER_TOKEN_FILE", "/var/run/secrets/kubernetes.io/serviceaccount/token"
)
PORTAL_IN_CLUSTER_CA_FILE = os.environ.get(
    "PORTAL_IN_CLUSTER_CA_FILE", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)
# Per-call timeout towards Kubernetes API servers, so no worker waits forever on a slow cluster.
PORTAL_KUBE_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_KUBE_TIMEOUT_SECONDS", "20"))
# First retry delay after a transient Kubernetes error; doubles per attempt (capped at 5 minutes).
PORTAL_KUBE_RETRY_BASE_SECONDS = float(os.environ.get("PORTAL_KUBE_RETRY_BASE_SECONDS", "5"))
# Prefix of the labels and annotations the portal writes on Kubernetes objects.
PORTAL_LABEL_DOMAIN = os.environ.get("PORTAL_LABEL_DOMAIN", "gpu-portal.io")
# --- MIG plans ---
# Defaults of a new plan: how long a cordoned node waits for its GPU pods, and for mig-manager to report.
PORTAL_MIG_DRAIN_TIMEOUT_SECONDS = int(os.environ.get("PORTAL_MIG_DRAIN_TIMEOUT_SECONDS", "3600"))
PORTAL_MIG_RECONFIGURE_TIMEOUT_SECONDS = int(os.environ.get("PORTAL_MIG_RECONFIGURE_TIMEOUT_SECONDS", "900"))
# Chargeback: how a MIG slice converts to GPU equivalents ("compute" slices or "memory" fraction), and the
# longest report window the API accepts.
CHARGEBACK_MIG_EQUIVALENTS = os.environ.get("CHARGEBACK_MIG_EQUIVALENTS", "compute")
CHARGEBACK_MAX_REPORT_DAYS = int(os.environ.get("CHARGEBACK_MAX_REPORT_DAYS", "400"))
# Who bills in the FOCUS export: its Provider, Publisher and InvoiceIssuer columns.
CHARGEBACK_FOCUS_PROVIDER = os.environ.get("CHARGEBACK_FOCUS_PROVIDER", "GPU Golden Path Portal")

# Logs: plain text by default (development server), one JSON object per line with LOG_FORMAT=json. Both carry
# the request id (portal.request_context) in web requests and in the Celery tasks they dispatch.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain")
if LOG_FORMAT not in {"plain", "json"}:
    raise RuntimeError("LOG_FORMAT must be plain or json")
# One access-log line per request from our middleware (gunicorn's own access log is off in the image).
LOG_REQUESTS = env_bool("LOG_REQUESTS", LOG_FORMAT == "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "portal.logs.RequestContextFilter"},
                "forbidden_without_traceback": {"()": "portal.logs.ForbiddenWithoutTraceback"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "portal.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_context"]}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # A logger's filters see its records before any handler (and before pytest's caplog) does.
    "loggers": {"django.request": {"filters": ["forbidden_without_traceback"]}},
}
# Celery workers log through the configuration above instead of replacing the root logger's handlers.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

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

# --- Operations: request ids, metrics, worker heartbeat ------------------------------------------------------
# /metrics is open when unset; set it and give Prometheus `authorization: {credentials: <token>}`.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# A database that does not answer fails /readyz within the probe's timeout instead of hanging it.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", int(os.environ.get("DB_CONNECT_TIMEOUT", "5")))
# --- end of operations settings ------------------------------------------------------------------------------

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
# role=group pairs; the highest role any of the user's groups grants wins (platform > finance > engineer).
OIDC_ROLE_GROUPS = os.environ.get("OIDC_ROLE_GROUPS", "platform=gpu-platform,finance=gpu-finance,engineer=gpu-users")
# Groups named <prefix><team slug> make the user a member of that (existing) team.
OIDC_TEAM_GROUP_PREFIX = os.environ.get("OIDC_TEAM_GROUP_PREFIX", "gpu-team-")
# A first sign-on is linked to the one existing account with the provider's verified e-mail address (instead of
# getting an account of its own). Only for a provider that verifies every address it vouches for.
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

# --- Backstage integration (intake.backstage) --------------------------------------------------------------------
# The portal's public URL, for links in catalog entities, the software template and notifications (empty: the
# request's host where there is one, http://127.0.0.1:8000 in notifications).
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "").rstrip("/")
# Catalog namespace of the exported Resource entities, and of the Group entities that own them (one per team).
BACKSTAGE_NAMESPACE = os.environ.get("BACKSTAGE_NAMESPACE", "default")
BACKSTAGE_GROUP_NAMESPACE = os.environ.get("BACKSTAGE_GROUP_NAMESPACE", "default")
# Optional System entity the exported resources belong to.
BACKSTAGE_SYSTEM = os.environ.get("BACKSTAGE_SYSTEM", "")
# --- end of Backstage settings -----------------------------------------------------------------------------------

# --- status reconciliation, stalled gangs and notifications (reconcile) ----------------------------------------
# Beat runs one reconciliation per cluster every interval: a LIST (first run, fallback) or a resumed WATCH,
# bounded well below the interval so runs never overlap (a per-cluster Redis lock makes sure of it).
PORTAL_RECONCILE_INTERVAL_SECONDS = float(os.environ.get("PORTAL_RECONCILE_INTERVAL_SECONDS", "60"))
PORTAL_RECONCILE_WATCH_SECONDS = int(os.environ.get("PORTAL_RECONCILE_WATCH_SECONDS", "45"))
# The Kueue admission check (provisioning/admission.py): how often beat lists every Kueue cluster's Workloads and
# writes the portal's check (an approval reaches the cluster within this); 0 turns the beat entry off.
PORTAL_ADMISSION_SYNC_SECONDS = float(os.environ.get("PORTAL_ADMISSION_SYNC_SECONDS", "15"))
# ... and how long Kueue keeps a Workload waiting for approval out of its queue after the check released its quota
# (Retry's requeueAfterSeconds): the longest an approved found request waits for its requeue.
PORTAL_ADMISSION_RETRY_SECONDS = int(os.environ.get("PORTAL_ADMISSION_RETRY_SECONDS", "60"))
# A worker re-lists pods from scratch at least this often, whatever its watch says (an informer's resync).
PORTAL_RECONCILE_RELIST_SECONDS = float(os.environ.get("PORTAL_RECONCILE_RELIST_SECONDS", "600"))
# Pods per page of that LIST (client-go's default page size): a worker holds one decoded page at a time.
PORTAL_RECONCILE_LIST_PAGE_SIZE = int(os.environ.get("PORTAL_RECONCILE_LIST_PAGE_SIZE", "500"))
# A pod that cannot pull its image for this long fails its request (and its objects are removed).
PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS = int(
    os.environ.get("PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS", "600")
)
# A request with no pod at all for this long fails (queues such as Kueue hold suspended Jobs without pods); 0: never.
PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS = int(os.environ.get("PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS", "3600"))
# Used for a workload class that has no GangPolicy row (the data migration creates one per class).
PORTAL_GANG_STALL_AFTER_SECONDS = int(os.environ.get("PORTAL_GANG_STALL_AFTER_SECONDS", "900"))

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
# A lease's reminder goes out this many hours before it ends (once per expiry).
PORTAL_LEASE_REMINDER_HOURS = float(os.environ.get("PORTAL_LEASE_REMINDER_HOURS", "24"))
# Idle GPUs (chargeback/idle/): how long each Prometheus query may take, and how far back a scan reads (the
# window of the utilisation and memory figures right-sizing is based on; at least the longest idle_after).
PORTAL_PROMETHEUS_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_PROMETHEUS_TIMEOUT_SECONDS", "10"))
PORTAL_IDLE_LOOKBACK_SECONDS = int(os.environ.get("PORTAL_IDLE_LOOKBACK_SECONDS", "86400"))

# --- background work: the sweeps and the one beat schedule of the project (docs/operations-background-work.md) ---
# A queued job (or notice) not started this long after its dispatch is sent again by the sweep, however many
# messages wait in the broker: a duplicate is skipped by the task, a lost message is otherwise lost for good.
PORTAL_SWEEP_GRACE_SECONDS = float(os.environ.get("PORTAL_SWEEP_GRACE_SECONDS", "60"))
PORTAL_NOTIFICATION_SWEEP_GRACE_SECONDS = float(os.environ.get("PORTAL_NOTIFICATION_SWEEP_GRACE_SECONDS", "120"))
# A job running (or waiting to retry) with no change for this long, and no worker holding its lock, lost its
# worker and its message: it is sent again (an attempt counted), or failed after its last attempt. Longer than
# the apply task's hard time limit (660 s) and the longest retry backoff (300 s).
PORTAL_JOB_STUCK_SECONDS = float(os.environ.get("PORTAL_JOB_STUCK_SECONDS", "900"))
# Periodic tasks, each at its own second within its period (portal.schedules), so that they never reach the
# workers together: at most one of them is sent in any one second with the default periods. A period of 0 (in
# the environment) turns the entry off.
def _env_every(setting: str, default: str, offset: float) -> offset_schedule | None:
    seconds = float(os.environ.get(setting, default))
    return offset_schedule(seconds, offset=offset) if seconds > 0 else None


CELERY_BEAT_SCHEDULE: dict = {name: entry for name, entry in {
    # Work whose message was lost, in every outbox (portal.outbox): provisioning jobs, stalled-gang notices, notices.
    "outbox-sweep": {
        "task": "portal.outbox_sweep", "schedule": _env_every("PORTAL_SWEEP_SECONDS", "60", offset=5),
    },
    # A worker records a heartbeat every minute; gpu_portal_worker_heartbeat_age_seconds shows when that stops.
    "portal.ping": {"task": "portal.ping", "schedule": offset_schedule(60.0, offset=20)},
    # One pod reconciliation per enabled cluster (a LIST or a bounded WATCH).
    "provisioning-status-reconcile": {
        "task": "provisioning.status_reconcile_all",
        "schedule": offset_schedule(PORTAL_RECONCILE_INTERVAL_SECONDS, offset=50),
    },
    # Kueue admission check: each Kueue cluster's Workloads listed and the portal's check written.
    "admission-checks-sync": {
        "task": "provisioning.admission_checks_sync_all",
        "schedule": _env_every("PORTAL_ADMISSION_SYNC_SECONDS", "15", offset=3),
    },
    # MIG plans: every approved or executing plan moves on as far as it can.
    "mig-plans-advance": {
        "task": "provisioning.mig_plans_advance", "schedule": _env_every("PORTAL_MIG_ADVANCE_SECONDS", "15", offset=12),
    },
    # Inventory discovery of every enabled cluster.
    "inventory-sync": {
        "task": "provisioning.inventory_sync_all",
        "schedule": _env_every("PORTAL_INVENTORY_SYNC_SECONDS", "300", offset=130),
    },
    # Why approved requests wait, and the actual start of those that began running (provisioning.waits).
    "request-wait-refresh": {
        "task": "provisioning.wait_refresh_all", "schedule": _env_every("PORTAL_WAIT_REFRESH_SECONDS", "60", offset=44),
    },
    # Chargeback: one ingestion pass over every enabled cluster's portal pods.
    "chargeback-usage-collect": {
        "task": "chargeback.usage_collect", "schedule": _env_every("CHARGEBACK_COLLECT_SECONDS", "300", offset=220),
    },
    # Leases: reminders before expiry, teardown at expiry (intake.leases).
    "intake-lease-sweep": {
        "task": "intake.lease_sweep", "schedule": _env_every("PORTAL_LEASE_SWEEP_SECONDS", "300", offset=75),
    },
    # Budgets: a notice per threshold crossed, once a month (chargeback.budgets).
    "chargeback-budget-thresholds": {
        "task": "chargeback.budget_thresholds_notify",
        "schedule": _env_every("CHARGEBACK_BUDGET_CHECK_SECONDS", "900", offset=465),
    },
    # Idle GPUs: every cluster with a prometheus_url, its running requests' utilisation (chargeback/idle/).
    "chargeback-idle-scan": {
        "task": "chargeback.idle_scan_all", "schedule": _env_every("PORTAL_IDLE_SCAN_SECONDS", "300", offset=163),
    },
}.items() if entry["schedule"] is not None}
# --- end background work -----------------------------------------------------------------------------------------

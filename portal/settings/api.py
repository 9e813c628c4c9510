"""The REST API: DRF, the OpenAPI schema, rate limits and tokens.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

from .database import CACHES

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

PORTAL_API_RATE = os.environ.get("PORTAL_API_RATE", "1200/min")
PORTAL_MAX_TOKENS_PER_USER = int(os.environ.get("PORTAL_MAX_TOKENS_PER_USER", "10"))
PORTAL_RATE_LIMIT_REDIS_URL = os.environ.get("PORTAL_RATE_LIMIT_REDIS_URL", CACHES["default"]["LOCATION"])

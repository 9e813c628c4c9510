"""One error shape for the whole API.

Validation errors keep DRF's field-keyed form (`{"answers": {"replicas": ["..."]}}`), so a client can point at
the field. Everything else is `{"detail": "...", "code": "..."}`. Domain errors raised by services are mapped
here, so views never translate exceptions themselves.
"""
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.errors import DomainError


def exception_handler(exc, context):
    # Errors are JSON whatever format the successful answer would have had (e.g. `?format=yaml`).
    request = context.get("request")
    if request is not None:
        request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
    if isinstance(exc, DomainError):
        body = {"detail": exc.message, "code": exc.code}
        if exc.field:
            body = exc.as_field_errors()
        return Response(body, status=exc.http_status)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data.setdefault("code", getattr(exc, "default_code", "error"))
    return response


__all__ = ["exception_handler", "status"]


@csrf_exempt  # nothing is changed here, and a POST to a wrong URL must get the JSON 404, not a CSRF page
def api_not_found(request, *args, **kwargs):
    """Any /api/ path that matches no endpoint: a JSON 404 like every other API error, not an HTML page."""
    from django.http import JsonResponse

    return JsonResponse({"detail": "No such endpoint.", "code": "not_found"}, status=404)

"""One error shape for the whole API.

Validation errors keep DRF's field-keyed form (`{"answers": {"replicas": ["..."]}}`), so a client can point at
the field. Everything else is `{"detail": "...", "code": "..."}`. Domain errors raised by services are mapped
here, so views never translate exceptions themselves.
"""
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.errors import DomainError


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        body = {"detail": exc.message, "code": exc.code}
        if exc.field:
            body = exc.as_field_errors()
        return Response(body, status=exc.http_status)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data.setdefault("code", getattr(exc, "default_code", "error"))
    return response


__all__ = ["exception_handler", "status"]

"""Domain errors raised by services. The API maps them to HTTP in one place (portal.api.exceptions)."""
from __future__ import annotations


class DomainError(Exception):
    http_status = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, path: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        # `path` nests the field, e.g. ("answers", "replicas"); `field` is the leaf name.
        self.path = path or ((field,) if field else ())
        self.field = self.path[-1] if self.path else None

    def as_field_errors(self) -> dict:
        body: dict = {self.path[-1]: [self.message]}
        for key in reversed(self.path[:-1]):
            body = {key: body}
        return body


class InvalidInput(DomainError):
    """The input cannot be accepted as given (HTTP 400, naming the field)."""


class PermissionDenied(DomainError):
    http_status = 403
    code = "permission_denied"


class NotFound(DomainError):
    http_status = 404
    code = "not_found"


class Conflict(DomainError):
    """A state transition that is not allowed from the current state (HTTP 409)."""

    http_status = 409
    code = "conflict"

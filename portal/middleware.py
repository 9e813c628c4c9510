"""Request guards: what must be refused before any view reads the request (API clients get JSON)."""
from __future__ import annotations

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse
from django.urls import reverse


class ApiBodySizeLimitMiddleware:
    """An API body larger than DATA_UPLOAD_MAX_MEMORY_SIZE gets a JSON 413 up front, instead of Django's HTML
    "Bad Request" page when the body is read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if request.path.startswith("/api/") and limit is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                return JsonResponse(
                    {"detail": f"The request body is {length} bytes; the limit is {limit}.", "code": "too_large"},
                    status=413,
                )
        return self.get_response(request)


class AdminNulQueryMiddleware:
    """A NUL character in a query parameter of the admin is a 400 naming the parameter, before a list filter or
    search hands it to PostgreSQL (which refuses NUL in text: 101 filter values on 24 changelists answered 500).
    The portal's pages check their filters with their filter sets, and the API with its own field-level 400s."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(reverse("admin:index")):
            for key, values in request.GET.lists():
                if "\x00" in key or any("\x00" in value for value in values):
                    return HttpResponseBadRequest(
                        f"The parameter {key.replace(chr(0), '%00')!r} may not contain the NUL character (%00).",
                        content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """Sends settings.PORTAL_CONTENT_SECURITY_POLICY on every response that has none of its own.

    The pages load scripts only from our static files (no inline script, no eval), so scripts are 'self' only;
    inline styles stay allowed (style attributes in templates, the admin's and Swagger UI's own <style>), which
    cannot run code.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.PORTAL_CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response

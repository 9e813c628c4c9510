"""The web pages' 403 and 500 pages (handler403 / handler500), in the portal's layout.

A 403 carries the view's own message ("Only the platform team reads the decision register."). The API never gets
here: DRF's one exception handler answers it in JSON.
"""
from __future__ import annotations

from django.shortcuts import render
from django.template import loader
from django.http import HttpResponseServerError

DEFAULT_FORBIDDEN = "Your role does not allow this page."


def permission_denied(request, exception=None):
    message = str(exception) if exception is not None and str(exception) else DEFAULT_FORBIDDEN
    return render(request, "403.html", {"message": message}, status=403)


def server_error(request):
    # No request context: the context processors may need the database that just failed.
    return HttpResponseServerError(loader.get_template("500.html").render())

"""The platform team's register page: every decision area with its verdict badge and evidence tables."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from portal.errors import DomainError
from portal.roles import is_platform
from provisioning.selectors import wait_estimate_error

from . import selectors
from .choices import Verdict


@login_required
def register_page(request):
    if not is_platform(request.user):
        raise PermissionDenied("Only the platform team reads the decision register.")
    days = selectors.DEFAULT_DAYS
    if request.GET.get("days"):
        try:
            days = selectors.register_window(request.GET["days"])
        except DomainError as exc:
            messages.error(request, f"days: {exc.message} Showing {days} days.")
    register = selectors.register_build(days=days)
    return render(request, "register/register.html", {"register": register, "verdicts": Verdict,
                                                      "wait_error": wait_estimate_error()})

"""The portal's own pages: a user's API tokens (issue, see, revoke)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from . import selectors, services
from .errors import DomainError
from .forms import ApiTokenForm


@login_required
def token_list(request):
    form = ApiTokenForm(request.POST or None)
    issued = None
    if request.method == "POST" and form.is_valid():
        try:
            issued = services.token_issue(user=request.user, name=form.cleaned_data["name"],
                                          expires_at=form.expires_at())
        except DomainError as exc:
            form.add_error("name" if exc.field == "name" else None, exc.message)
        else:
            form = ApiTokenForm()
    # The new secret is rendered into this response only (never a message or a redirect): shown once.
    return render(request, "portal/tokens.html", {
        "form": form, "tokens": selectors.token_list(user=request.user),
        "issued": issued[0] if issued else None, "issued_secret": issued[1] if issued else None,
        "now": timezone.now(),
    })


@login_required
@require_POST
def token_revoke(request, pk: int):
    # This page is the user's own tokens, whatever their role: another's token is not found.
    token = get_object_or_404(selectors.token_list(user=request.user), pk=pk)
    services.token_revoke(actor=request.user, token_id=token.pk)
    messages.success(request, f"Token {token.name} ({token.prefix}…) revoked: it no longer works.")
    return redirect("tokens")

"""The capacity page (platform team and engineers; read only): per cluster, pool and kind of device, what is
allocated, free, reserved and queued now, the fragmentation in the way of big pods, and the last 30 days."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from portal.roles import is_platform, user_roles
from portal.selectors import team_visible_ids

from .capacity_chart import daily_columns
from .selectors.capacity_history import DAYS, capacity_history
from .selectors.capacity_page import capacity_overview


@login_required
def capacity_page(request):
    if not (is_platform(request.user) or "engineer" in user_roles(request.user)):
        raise PermissionDenied("The capacity page is for the platform team and engineers.")
    team_ids = team_visible_ids(user=request.user)
    clusters = capacity_overview(user=request.user)
    history = capacity_history(team_ids=team_ids)
    charts = {c.name: daily_columns(history[c.name], capacity=c.equivalents_total or None, mine=team_ids is not None)
              for c in clusters if c.name in history}
    return render(request, "provisioning/capacity.html", {
        "clusters": [(c, charts.get(c.name), history.get(c.name)) for c in clusters],
        "days": DAYS, "engineer": team_ids is not None,
    })

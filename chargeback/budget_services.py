"""Budget writes: the platform team sets budgets (admin and API); a beat task notifies each threshold the month's
committed forecast crosses, once per threshold per budget (a budget is one month), by e-mail and the team's signed
webhook (portal.notices)."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal.errors import InvalidInput, PermissionDenied
from portal.notices import notice_queue
from portal.roles import is_platform

from .budgets import budget_forecast
from .models import Budget
from .periods import month_start

BUDGET_FIELDS = ("team", "cost_center", "month", "gpu_hours", "amount", "currency", "thresholds", "mode", "note")


def _require_platform(user) -> None:
    if not is_platform(user):
        raise PermissionDenied("Only the platform team sets budgets.")


def budget_check(*, gpu_hours: Decimal | None, amount: Decimal | None, thresholds: list[int]) -> None:
    if gpu_hours is None and amount is None:
        raise InvalidInput("Give a limit: gpu_hours, amount or both.", field="amount")
    if not thresholds or any(not 1 <= t <= 1000 for t in thresholds) or len(set(thresholds)) != len(thresholds):
        raise InvalidInput("Thresholds are distinct percentages from 1 to 1000, e.g. [80, 100].", field="thresholds")


@transaction.atomic
def budget_create(*, user, **values) -> Budget:
    _require_platform(user)
    values["month"] = month_start(values["month"])
    values.setdefault("thresholds", [80, 100])
    budget_check(gpu_hours=values.get("gpu_hours"), amount=values.get("amount"), thresholds=values["thresholds"])
    if Budget.objects.filter(team=values["team"], cost_center=values.get("cost_center", ""),
                             month=values["month"]).exists():
        raise InvalidInput(f"{values['team'].slug} already has a budget for {values['month']:%Y-%m}"
                           + (f" and cost centre {values['cost_center']}" if values.get("cost_center") else "")
                           + "; change that one.", field="month")
    budget = Budget(created_by=user, **{**values, "thresholds": sorted(values["thresholds"])})
    budget.full_clean()
    try:
        with transaction.atomic():
            budget.save()
    except IntegrityError:
        raise InvalidInput("That budget was just created by someone else; change that one.", field="month") from None
    return budget


@transaction.atomic
def budget_update(*, user, budget: Budget, **changes) -> Budget:
    _require_platform(user)
    budget = Budget.objects.select_for_update(no_key=True).get(pk=budget.pk)
    for name, value in changes.items():
        setattr(budget, name, month_start(value) if name == "month" else value)
    budget.thresholds = sorted(budget.thresholds)
    budget_check(gpu_hours=budget.gpu_hours, amount=budget.amount, thresholds=budget.thresholds)
    budget.full_clean()
    budget.save()
    return budget


@transaction.atomic
def budget_delete(*, user, budget: Budget) -> None:
    _require_platform(user)
    budget.delete()


def _notice_text(forecast, threshold: int) -> str:
    budget = forecast.budget
    where = f"{budget.team.slug}" + (f" (cost centre {budget.cost_center})" if budget.cost_center else "")
    return (f"{where} has reached {forecast.committed_percent}% of its {budget.month:%B %Y} budget (threshold "
            f"{threshold}%): spent so far and running work come to {budget.currency} {forecast.committed_cost} "
            f"and {forecast.committed_hours.quantize(Decimal('0.01'))} GPU-equivalent hours; with pending "
            f"approvals, {forecast.words()}.")


def budget_thresholds_notify(*, now: datetime | None = None) -> list[tuple[int, int]]:
    """Beat: for every budget of this month, each threshold the committed forecast (spent + running work) has
    reached is notified once. Returns (budget id, threshold) pairs notified now; a second run returns none."""
    now = now or timezone.now()
    crossed = []
    for budget in Budget.objects.filter(month=month_start(now.date())).select_related("team").order_by("pk"):
        forecast = budget_forecast(budget=budget, now=now)
        for threshold in budget.thresholds:
            if forecast.committed_percent < threshold:
                continue
            text = _notice_text(forecast, threshold)
            with transaction.atomic():
                queued = notice_queue(
                    key=f"budget:{budget.pk}:{threshold}", team=budget.team,
                    subject=f"[GPU portal] {budget.team.slug}: {threshold}% of the {budget.month:%B} budget",
                    body=text + f"\n\n{settings.PORTAL_BASE_URL or 'http://127.0.0.1:8000'}/chargeback/\n",
                    payload={"event": "budget.threshold", "team": budget.team.slug,
                             "cost_center": budget.cost_center, "month": f"{budget.month:%Y-%m}",
                             "threshold": threshold, "percent": int(forecast.committed_percent),
                             "forecast": forecast.as_dict(), "text": text})
            if queued:
                crossed.append((budget.pk, threshold))
    return crossed

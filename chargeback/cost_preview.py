"""The preview's cost section (workflows.selectors.preview_sections): before anything is submitted, the GPU-hours
the request would use, what they cost at the rate card in force today, and what share of the team's budget left
this month they take. Reads only."""
from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django.template.loader import render_to_string
from django.utils import timezone

from gpu.vocabulary import STRATEGY_WORDS

from .models import RateCard

CENT = Decimal("0.01")


def _money(value: Decimal) -> str:
    return f"{value.quantize(CENT, rounding=ROUND_HALF_UP):,}"


def _hours(value: Decimal) -> str:
    return f"{value.quantize(CENT, rounding=ROUND_HALF_UP).normalize():,f}"


def _price(value: Decimal) -> str:
    """A rate as written on the card, with at least the cents: 2.9 -> "2.90", 0.1234 -> "0.1234"."""
    text = f"{value.normalize():f}"
    whole, _, decimals = text.partition(".")
    return f"{whole}.{decimals.ljust(2, '0')}"


def rate_card_in_force(*, gpu_model: str, strategy: str, on) -> RateCard | None:
    return (RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy, valid_from__lte=on)
            .order_by("-valid_from", "-pk").first())


def _budget_words(forecast: dict) -> str:
    """From the budget gate's forecast (decision["budget"]): what is left before this request and its share."""
    before = sum(Decimal(forecast[k] or 0) for k in ("spent_cost", "committed_cost", "pending_cost"))
    month = datetime.strptime(forecast["month"], "%Y-%m").strftime("%B %Y")
    if forecast.get("budget_amount") is not None:
        amount, currency = Decimal(forecast["budget_amount"]), forecast["currency"]
        left = amount - before
        candidate = Decimal(forecast["forecast_cost"]) - before
        head = (f"{forecast['team']} has {currency} {_money(max(left, Decimal(0)))} left of its {month} budget of "
                f"{currency} {_money(amount)} (after what is spent, running and waiting for approval)")
        unit = currency
    else:
        amount = Decimal(forecast["budget_gpu_hours"])
        before = sum(Decimal(forecast[k] or 0) for k in ("spent_gpu_hours", "committed_gpu_hours", "pending_gpu_hours"))
        left = amount - before
        candidate = Decimal(forecast["forecast_gpu_hours"]) - before
        head = (f"{forecast['team']} has {_hours(max(left, Decimal(0)))} of its {month} budget of {_hours(amount)} "
                "GPU-equivalent hours left (after what is spent, running and waiting for approval)")
        unit = "GPU-equivalent hours"
    shown = f"{unit} {_money(candidate)}" if unit != "GPU-equivalent hours" else f"{_hours(candidate)} {unit}"
    if left <= 0:
        return f"{head}; this request would add {shown} this month, over the budget."
    share = (candidate / left * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return f"{head}; this request would take {shown} of it this month: {share}% of what is left."


def cost_preview_section(*, team, decision, answers: dict) -> dict | None:
    """`decision`: the preview's intake.decisions.Decision."""
    equivalents = Decimal(str(decision.gpu_equivalents or 0))
    if not equivalents:
        return None
    hours, basis = answers.get("expected_hours"), "your expected run time"
    if not hours and decision.lease is not None and decision.lease.hours:
        hours, basis = decision.lease.hours, "its lease (no expected run time given)"
    card = rate_card_in_force(gpu_model=decision.gpu_model, strategy=decision.strategy, on=timezone.now().date())
    gpu_hours = equivalents * Decimal(str(hours)) if hours else None
    cost = (gpu_hours * card.price_per_equivalent_hour) if card and gpu_hours is not None else None
    per_hour = equivalents * card.price_per_equivalent_hour if card else None
    context = {
        "equivalents": equivalents, "hours": Decimal(str(hours)) if hours else None, "basis": basis,
        "gpu_hours": _hours(gpu_hours) if gpu_hours is not None else None, "card": card,
        "cost": _money(cost) if cost is not None else None, "per_hour": _money(per_hour) if per_hour else None,
        "price": _price(card.price_per_equivalent_hour) if card else None,
        "what": f"{decision.gpu_model} {STRATEGY_WORDS.get(decision.strategy, decision.strategy)}s",
        "budget": _budget_words(decision.budget) if decision.budget else "",
    }
    return {"title": "GPU-hours and cost", "html": render_to_string("chargeback/_cost_preview.html", context)}

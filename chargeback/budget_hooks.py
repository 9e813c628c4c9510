"""Budgets in intake's decisions and review page, through intake's hooks (intake.hooks), registered in
`ChargebackConfig.ready()`: a decision for a team with a budget this month says what approving it does to the
forecast (`Decision.budget`); under `require_review` a request that would overrun goes to the platform team even
when a rule would approve it, with the stable review code `OverBudget` and the overrun in the approval reason."""
from __future__ import annotations

from dataclasses import replace

from django.template.loader import render_to_string
from django.utils import timezone

from intake.decisions import REVIEW, Decision, summarise

from .budgets import budget_forecast, budget_get, request_budget_impact, team_budget, team_budget_id
from .choices import BudgetMode

OVER_BUDGET = "OverBudget"


def impact_words(forecast, *, team_slug: str) -> str:
    """'approving this takes vision to 112% of its November budget, forecast EUR 4,210 of 3,750'"""
    return (f"approving this takes {team_slug} to {forecast.forecast_percent}% of its "
            f"{forecast.budget.month:%B} budget, {forecast.words()}")


_UNREAD = object()


def budget_gate_reads(*, team):
    """What the gate reads first, for intake to read beside the decision's stamps: the id of the team's budget this
    month (NULL: none), so a team without a budget costs the submission no query of ours."""
    return team_budget_id(team=team, month=timezone.now().date())


def budget_gate(*, team, decision: Decision, answers: dict, read=_UNREAD) -> Decision:
    if read is _UNREAD:
        budget = team_budget(team=team, month=timezone.now().date())
    else:
        budget = budget_get(read) if read is not None else None
    forecast = request_budget_impact(budget=budget, answers=answers, decision=decision)
    if forecast is None:
        return decision
    words = impact_words(forecast, team_slug=team.slug)
    gated = replace(decision, budget={**forecast.as_dict(), "words": words})
    if not (forecast.over and forecast.budget.mode == BudgetMode.REQUIRE_REVIEW):
        return gated
    text = f"Over budget: {words}. {REVIEW}"
    if decision.auto_approve:
        text = f"Not approved automatically: {words}. {REVIEW}"
    gated = gated.held_for_review(code=OVER_BUDGET, text=text)
    return replace(gated, summary=summarise(gated, None))


def budget_review_section(*, gpu_request) -> dict | None:
    """The review page's budget section: the forecast now, this request (pending) included."""
    budget = team_budget(team=gpu_request.team, month=timezone.now().date())
    if budget is None:
        return None
    forecast = budget_forecast(budget=budget)
    if gpu_request.status == "pending_approval":
        words = impact_words(forecast, team_slug=gpu_request.team.slug)
    else:
        words = f"{gpu_request.team.slug} is at {forecast.forecast_percent}% of its {budget.month:%B} budget, {forecast.words()}"
    return {"title": "Budget", "html": render_to_string("admin/chargeback/_budget_impact.html", {
        "forecast": forecast, "words": words[0].upper() + words[1:], "budget": budget})}

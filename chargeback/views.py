"""The finance page: a period and a grouping, a table, a chart of GPU-hours by team stacked by strategy, a drill
into one team down to its requests, and the CSV. Finance and platform see every team; engineers their own."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from django.utils import timezone

from portal.selectors import team_list_visible

from . import selectors
from .budgets import budget_forecast, budget_list, month_bounds
from .charts import burn_down, stacked_bars
from .exporters import ROUNDING_NOTES
from .forms import GROUP_BY_LABELS, ReportForm

MEASURE_LABELS = {"category": "Category", "device_hours": "Device-hours", "gpu_equivalent_hours": "GPU-equivalent hours",
                  "cost": "Cost", "currency": "Currency"}
DRILL_GROUP_BY = ["request", "strategy", "gpu_model", "mig_profile"]


def _csv_url(*, start, end, group_by, **filters) -> str:
    query = {"start": start.isoformat(), "end": end.isoformat(), "group_by": ",".join(group_by), "format": "csv",
             **{k: v for k, v in filters.items() if v}}
    return f"{reverse('chargeback-report')}?{urlencode(query)}"


def _focus_url(*, start, end, **filters) -> str:
    query = {"start": start.isoformat(), "end": end.isoformat(), **{k: v for k, v in filters.items() if v}}
    return f"{reverse('chargeback-focus')}?{urlencode(query)}"


CHART_BY = ("team", "strategy")


def _chart(user, *, start, end, filters=None, rows=None, group_by=()):
    """GPU-equivalent hours by team, stacked by strategy. From `rows` (the table's) when they are grouped by at
    least team and strategy: their exact seconds add up to the chart's, so no second report is run."""
    if rows is None or not set(CHART_BY) <= set(group_by):
        rows = selectors.report_rows(user=user, start=start, end=end, group_by=CHART_BY, filters=filters)
    else:
        rows = selectors.report_rows_regrouped(rows, group_by=CHART_BY)
    return stacked_bars((r["team"], r["strategy"], r["gpu_equivalent_hours"]) for r in rows
                        if r["category"] in ("usage", "waste", "idle", "preempted"))


def _budget_charts(user, *, team=None) -> list[dict]:
    """This month's budgets the user sees (of one team, on its page), each with its forecast and burn-down."""
    now = timezone.now()
    budgets = budget_list(user=user, month=now.date())
    if team is not None:
        budgets = budgets.filter(team=team)
    items = []
    for budget in budgets:
        forecast = budget_forecast(budget=budget, now=now)
        start, end = month_bounds(budget.month)
        money = budget.amount is not None
        chart = burn_down(
            month_start_at=start, month_end_at=end, now=now,
            daily=[(day, cost if money else hours) for day, hours, cost in forecast.daily],
            budget=budget.amount if money else budget.gpu_hours,
            forecast=forecast.forecast_cost if money else forecast.forecast_hours,
            unit=budget.currency if money else "GPU-equivalent hours")
        where = budget.team.slug + (f" / {budget.cost_center}" if budget.cost_center else "")
        items.append({"budget": budget, "forecast": forecast, "chart": chart,
                      "title": f"{where}, {budget.month:%B %Y} budget"})
    return items


def _table(columns, rows):
    """Headers, and per row the row itself with its (column, value) cells in order."""
    headers = [GROUP_BY_LABELS.get(c, MEASURE_LABELS.get(c, c)) for c in columns]
    return headers, [(row, [(c, row[c]) for c in columns]) for row in rows]


@login_required
def report(request):
    form = ReportForm(request.GET)
    context = {"form": form}
    if not form.is_bound or form.is_valid():
        period = form.period()
        query = selectors.report_query(user=request.user, **period)
        rows = selectors.report_rows(user=request.user, **period)
        columns = [c for c in query.csv_columns if c != "request_name"]
        headers, table = _table(columns, rows)
        context.update(
            period=period, headers=headers, table=table, columns=columns,
            chart=_chart(request.user, start=period["start"], end=period["end"], rows=rows,
                         group_by=period["group_by"]),
            csv_url=_csv_url(**period), focus_url=_focus_url(start=period["start"], end=period["end"]),
            has_demo=selectors.report_has_demo_data(user=request.user, start=period["start"], end=period["end"]),
            total=selectors.report_total(rows), rounding_notes=ROUNDING_NOTES, budgets=_budget_charts(request.user),
            drill_query=urlencode({"start": period["start"].isoformat(), "end": period["end"].isoformat()}),
            month_so_far=_month_so_far(request.user, shown=period),
            mismatches=selectors.allocation_mismatches(user=request.user, start=period["start"], end=period["end"]),
        )
    return render(request, "chargeback/report.html", context)


def _month_so_far(user, *, shown) -> dict | None:
    """This month's usage to now, by team, beside a period that is not this month (the page opens on last month,
    which is what finance bills; what is running now should be visible without changing the period). Its link
    keeps the grouping shown."""
    start, end = month_bounds(timezone.now().date())
    start, end = start.date(), end.date()
    if shown["start"] == start and shown["end"] == end:
        return None
    rows = selectors.report_rows(user=user, start=start, end=end, group_by=["team"])
    query = [("start", start.isoformat()), ("end", end.isoformat())] + [("group_by", g) for g in shown["group_by"]]
    return {"start": start, "end": end, "rows": rows, "url": "?" + urlencode(query)}


@login_required
def team_report(request, slug):
    team = team_list_visible(user=request.user).filter(slug=slug).first()
    if team is None:
        return render(request, "404.html", status=404)
    form = ReportForm(request.GET)
    context = {"form": form, "team": team}
    if not form.is_bound or form.is_valid():
        period = {**form.period(), "group_by": DRILL_GROUP_BY}
        filters = {"team": team.slug}
        rows = selectors.report_rows(user=request.user, filters=filters, **period)
        context.update(
            period=period, rows=rows, total=selectors.report_total(rows),
            chart=_chart(request.user, start=period["start"], end=period["end"], filters=filters),
            csv_url=_csv_url(team=team.slug, **period), rounding_notes=ROUNDING_NOTES,
            focus_url=_focus_url(start=period["start"], end=period["end"], team=team.slug),
            budgets=_budget_charts(request.user, team=team),
            back_query=urlencode({"start": period["start"].isoformat(), "end": period["end"].isoformat()}),
        )
    return render(request, "chargeback/team_report.html", context)

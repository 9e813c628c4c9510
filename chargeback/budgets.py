"""Budgets: the month's forecast held against a team's budget (reads only).

forecast = spent so far (the chargeback report over the month up to now: usage, waste and adjustments)
         + the committed remainder of running work (approved, provisioning, running or stalled requests: GPU
           equivalents x the hours they still have, from `expected_hours`, else the median run time observed for
           their workload class, else until the month ends; never past their lease or the month's end)
         + pending approvals (the same, from now), and, when a request is being decided, that request.

Hours are GPU-equivalent-hours; money is priced with the rate card in force now for the request's GPU model and
strategy, in the budget's currency (work with no card in that currency adds hours but no money).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.db import connection
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from intake.choices import REQUEST_HOLDING, RequestStatus
from intake.decisions import Decision
from intake.hooks import ScalarSql
from intake.models import GpuRequest, RequestEvent
from portal.selectors import team_visible_ids

from .models import Budget, RateCard
from .periods import add_months, day_start, month_start
from .selectors import report_rows

CENT = Decimal("0.01")


@dataclass(frozen=True)
class Commitment:
    """Work not metered yet: a request's GPU equivalents over the hours it is expected to hold them this month."""

    request_id: int
    name: str
    status: str
    hours: Decimal
    gpu_equivalent_hours: Decimal
    cost: Decimal | None
    basis: str  # expected_hours | observed | month_end | lease


@dataclass(frozen=True)
class Forecast:
    budget: Budget
    now: datetime
    spent_hours: Decimal
    spent_cost: Decimal
    committed: tuple[Commitment, ...]
    pending: tuple[Commitment, ...]
    candidate: Commitment | None = None
    # Spent per day of the month so far, cumulative: (day, hours, cost).
    daily: tuple[tuple[date, Decimal, Decimal], ...] = field(default_factory=tuple)

    def _sum(self, items, attr) -> Decimal:
        return sum((getattr(c, attr) or Decimal(0) for c in items), Decimal(0))

    @property
    def forecast_hours(self) -> Decimal:
        extra = [self.candidate] if self.candidate else []
        return self.spent_hours + self._sum((*self.committed, *self.pending, *extra), "gpu_equivalent_hours")

    @property
    def forecast_cost(self) -> Decimal:
        extra = [self.candidate] if self.candidate else []
        return (self.spent_cost + self._sum((*self.committed, *self.pending, *extra), "cost")).quantize(CENT)

    @property
    def committed_hours(self) -> Decimal:
        """Spent and running work only (no pending approvals, no candidate): what the threshold notices watch."""
        return self.spent_hours + self._sum(self.committed, "gpu_equivalent_hours")

    @property
    def committed_cost(self) -> Decimal:
        return (self.spent_cost + self._sum(self.committed, "cost")).quantize(CENT)

    def percent(self, *, hours: Decimal, cost: Decimal) -> Decimal:
        """The larger share of the budget's limits (money, GPU-hours), in percent."""
        shares = []
        if self.budget.amount:
            shares.append(cost / self.budget.amount * 100)
        if self.budget.gpu_hours:
            shares.append(hours / self.budget.gpu_hours * 100)
        return max(shares, default=Decimal(0)).quantize(Decimal(1), rounding=ROUND_HALF_UP)

    @property
    def forecast_percent(self) -> Decimal:
        return self.percent(hours=self.forecast_hours, cost=self.forecast_cost)

    @property
    def committed_percent(self) -> Decimal:
        return self.percent(hours=self.committed_hours, cost=self.committed_cost)

    @property
    def over(self) -> bool:
        return ((self.budget.amount is not None and self.forecast_cost > self.budget.amount)
                or (self.budget.gpu_hours is not None and self.forecast_hours > self.budget.gpu_hours))

    def words(self) -> str:
        """'forecast EUR 4,210 of 3,750' (money first when the budget has it) and the hours."""
        parts = []
        if self.budget.amount is not None:
            parts.append(f"forecast {self.budget.currency} {_money(self.forecast_cost)} of {_money(self.budget.amount)}")
        if self.budget.gpu_hours is not None:
            parts.append(f"{'forecast ' if not parts else ''}{_money(self.forecast_hours)} of "
                         f"{_money(self.budget.gpu_hours)} GPU-equivalent hours")
        return ", ".join(parts)

    def as_dict(self) -> dict:
        return {
            "budget": self.budget.pk, "team": self.budget.team.slug, "cost_center": self.budget.cost_center,
            "month": f"{self.budget.month:%Y-%m}", "mode": self.budget.mode, "currency": self.budget.currency,
            "budget_gpu_hours": _str(self.budget.gpu_hours), "budget_amount": _str(self.budget.amount),
            "spent_gpu_hours": _str(self.spent_hours.quantize(CENT)), "spent_cost": _str(self.spent_cost.quantize(CENT)),
            "committed_gpu_hours": _str(self._sum(self.committed, "gpu_equivalent_hours").quantize(CENT)),
            "committed_cost": _str(self._sum(self.committed, "cost").quantize(CENT)),
            "pending_gpu_hours": _str(self._sum(self.pending, "gpu_equivalent_hours").quantize(CENT)),
            "pending_cost": _str(self._sum(self.pending, "cost").quantize(CENT)),
            "forecast_gpu_hours": _str(self.forecast_hours.quantize(CENT)),
            "forecast_cost": _str(self.forecast_cost), "forecast_percent": int(self.forecast_percent),
            "over": self.over, "words": self.words(),
        }


def _str(value: Decimal | None) -> str | None:
    return None if value is None else f"{value:f}"


def _money(value: Decimal) -> str:
    return f"{value.quantize(Decimal(1), rounding=ROUND_HALF_UP):,}"


def month_bounds(month: date) -> tuple[datetime, datetime]:
    return day_start(month_start(month)), day_start(add_months(month, 1))


def _observed_hours_by_class(workload_classes: set[str]) -> dict[str, Decimal]:
    """The median run time (first pod start to last pod end) of the completed requests of each class."""
    if not workload_classes:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT r.workload_class,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM s.ended - s.started) / 3600)
            FROM (SELECT request_id, min(started_at) AS started, max(ended_at) AS ended
                  FROM chargeback_usageinterval WHERE ended_at IS NOT NULL AND request_id IS NOT NULL
                  GROUP BY request_id) s
            JOIN intake_gpurequest r ON r.id = s.request_id
            WHERE r.status = %s AND r.workload_class = ANY(%s)
            GROUP BY r.workload_class""", [RequestStatus.COMPLETED, sorted(workload_classes)])
        return {cls: Decimal(str(round(hours, 4))) for cls, hours in cursor.fetchall() if hours}


def _price(gpu_model: str, strategy: str, currency: str, *, on: date, cache: dict) -> Decimal | None:
    key = (gpu_model, strategy)
    if key not in cache:
        card = (RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy, valid_from__lte=on)
                .order_by("-valid_from").first())
        cache[key] = card
    card = cache[key]
    return card.price_per_equivalent_hour if card and card.currency == currency else None


def _commitment(*, request_id, name, status, answers, decision, started: datetime | None, lease_end, now, month_end,
                observed, prices, currency) -> Commitment:
    start = max(started or now, now) if status == RequestStatus.PENDING_APPROVAL else (started or now)
    expected = answers.get("expected_hours")
    lease = decision.lease
    if expected:
        basis, end = "expected_hours", start + timedelta(hours=float(expected))
    elif answers.get("workload_class") in observed:
        basis, end = "observed", start + timedelta(hours=float(observed[answers["workload_class"]]))
    else:
        basis, end = "month_end", month_end
    lease_until = lease_end or (start + timedelta(hours=lease.hours) if lease else None)
    if lease_until is not None and lease_until < end:
        basis, end = "lease", lease_until
    end = min(end, month_end)
    hours = Decimal(max(0.0, (end - max(start, now)).total_seconds()) / 3600).quantize(Decimal("0.0001"))
    equivalent_hours = hours * Decimal(str(decision.gpu_equivalents or 0))
    price = _price(decision.gpu_model, decision.strategy, currency, on=now.date(), cache=prices)
    return Commitment(request_id=request_id, name=name, status=status, hours=hours,
                      gpu_equivalent_hours=equivalent_hours.quantize(Decimal("0.0001")),
                      cost=(equivalent_hours * price).quantize(CENT) if price is not None else None, basis=basis)


def budget_forecast(*, budget: Budget, now: datetime | None = None, candidate: dict | None = None) -> Forecast:
    """The month's forecast for one budget. `candidate`: {"answers", "decision"} of a request being decided."""
    now = now or timezone.now()
    start, end = month_bounds(budget.month)
    clock = min(max(now, start), end)
    filters = {"team": budget.team.slug, "cost_center": budget.cost_center or None}
    rows = report_rows(user=None, start=start.date(), end=end.date(), group_by=["day"], filters=filters, now=clock)
    per_day: dict[date, list[Decimal]] = {}
    for row in rows:
        hours_cost = per_day.setdefault(date.fromisoformat(row["day"]), [Decimal(0), Decimal(0)])
        hours_cost[0] += row["gpu_equivalent_hours"] or 0
        if row["currency"] == budget.currency:
            hours_cost[1] += row["cost"] or 0
    daily, hours_so_far, cost_so_far = [], Decimal(0), Decimal(0)
    for day in sorted(per_day):
        hours_so_far += per_day[day][0]
        cost_so_far += per_day[day][1]
        daily.append((day, hours_so_far, cost_so_far))

    committed, pending = [], []
    if clock < end and (not budget.cost_center or budget.cost_center == budget.team.cost_center):
        approved_at = (RequestEvent.objects.filter(request=OuterRef("pk"), to_status=RequestStatus.APPROVED)
                       .order_by("-at").values("at")[:1])
        requests = list(GpuRequest.objects.filter(
            team=budget.team, status__in=[*REQUEST_HOLDING, RequestStatus.PENDING_APPROVAL])
            .annotate(approved_at=Subquery(approved_at)).order_by("pk")
            .values("pk", "name", "status", "answers", "decision", "approved_at", "lease_expires_at"))
        classes = {r["answers"].get("workload_class") for r in requests if not r["answers"].get("expected_hours")}
        if candidate and not candidate["answers"].get("expected_hours"):
            classes.add(candidate["answers"].get("workload_class"))
        observed, prices = _observed_hours_by_class(classes - {None}), {}
        for r in requests:
            item = _commitment(request_id=r["pk"], name=r["name"], status=r["status"], answers=r["answers"],
                               decision=r["decision"], started=r["approved_at"], lease_end=r["lease_expires_at"],
                               now=clock, month_end=end, observed=observed, prices=prices, currency=budget.currency)
            (pending if r["status"] == RequestStatus.PENDING_APPROVAL else committed).append(item)
        if candidate:
            candidate_item = _commitment(request_id=0, name="this request", status=RequestStatus.PENDING_APPROVAL,
                                         answers=candidate["answers"], decision=candidate["decision"], started=None,
                                         lease_end=None, now=clock, month_end=end, observed=observed, prices=prices,
                                         currency=budget.currency)
        else:
            candidate_item = None
    else:
        candidate_item = None
    return Forecast(budget=budget, now=clock, spent_hours=hours_so_far, spent_cost=cost_so_far,
                    committed=tuple(committed), pending=tuple(pending), candidate=candidate_item, daily=tuple(daily))


def team_budget(*, team, month: date) -> Budget | None:
    """The whole-team budget of that month, if any."""
    return Budget.objects.filter(team=team, cost_center="", month=month_start(month)).select_related("team").first()


def team_budget_id(*, team, month: date) -> ScalarSql:
    """`team_budget`'s id (NULL: none), for a caller to read beside its own query (the decision's stamps). At most
    one row: a team has one whole-team budget a month (the unique constraint on team, cost centre and month)."""
    quote = connection.ops.quote_name
    return ScalarSql(
        f"SELECT {quote('id')} FROM {quote(Budget._meta.db_table)} WHERE {quote('team_id')} = %s "
        f"AND {quote('cost_center')} = '' AND {quote('month')} = %s",
        (team.pk, month_start(month)),
    )


def budget_get(budget_id: int) -> Budget | None:
    return Budget.objects.filter(pk=budget_id).select_related("team").first()


def budget_list(*, user, month: date | None = None):
    """Budgets of the teams the user sees (finance and platform: all), newest month first."""
    budgets = Budget.objects.select_related("team")
    team_ids = team_visible_ids(user=user)
    if team_ids is not None:
        budgets = budgets.filter(team_id__in=team_ids)
    if month is not None:
        budgets = budgets.filter(month=month_start(month))
    return budgets.order_by("-month", "team__slug", "cost_center", "pk")


def request_budget_impact(*, budget: Budget | None, answers: dict, decision: Decision,
                          now: datetime | None = None) -> Forecast | None:
    """The forecast of the team's budget this month (`budget`; None: the team has none) if this request were
    approved too."""
    now = now or timezone.now()
    if budget is None:
        return None
    return budget_forecast(budget=budget, now=now, candidate={"answers": answers, "decision": decision})

"""Server-side charts as data for inline SVG (no JavaScript library, nothing fetched at run time)."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Iterable

STRATEGY_COLOURS = {"whole_gpu": "#0b6bcb", "mig": "#1a7f37", "time_slicing": "#c27c0e", "mps": "#8250df"}
OTHER_COLOUR = "#8a94a3"


@dataclass(frozen=True)
class Segment:
    stack: str
    value: Decimal
    x: float
    width: float
    colour: str


@dataclass(frozen=True)
class Bar:
    label: str
    total: Decimal
    y: float
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class StackedBarChart:
    bars: tuple[Bar, ...]
    legend: tuple[tuple[str, str], ...]  # (stack, colour)
    ticks: tuple[tuple[float, str], ...]  # (x, label)
    width: int
    height: int
    plot_left: int
    plot_width: int
    bar_height: int
    unit: str


def _nice_step(maximum: Decimal) -> Decimal:
    """A round tick step (1, 2 or 5 x 10^n) giving about five ticks up to `maximum`."""
    if maximum <= 0:
        return Decimal(1)
    raw = maximum / 5
    magnitude = Decimal(10) ** raw.adjusted()
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def stacked_bars(
    values: Iterable[tuple[str, str, Decimal]],
    *,
    unit: str = "GPU-equivalent hours",
    width: int = 760,
    plot_left: int = 140,
    bar_height: int = 26,
    gap: int = 10,
) -> StackedBarChart:
    """Horizontal bars, one per label (e.g. team), stacked by `stack` (e.g. strategy), from
    (label, stack, value) triples; negative values (adjustments) are left out of the picture."""
    totals: dict[str, dict[str, Decimal]] = {}
    for label, stack, value in values:
        if value and value > 0:
            bucket = totals.setdefault(label or "(none)", {})
            bucket[stack] = bucket.get(stack, Decimal(0)) + value
    stacks = sorted({s for bucket in totals.values() for s in bucket},
                    key=lambda s: (list(STRATEGY_COLOURS).index(s) if s in STRATEGY_COLOURS else 99, s))
    maximum = max((sum(bucket.values()) for bucket in totals.values()), default=Decimal(0))
    step = _nice_step(maximum)
    # Round up to whole steps (Decimal's // truncates, which cut the axis below the largest bar).
    axis_max = step * max(1, int((maximum / step).to_integral_value(rounding=ROUND_CEILING))) if maximum else step
    plot_width = width - plot_left - 20
    scale = plot_width / float(axis_max)
    bars = []
    for index, label in enumerate(sorted(totals)):
        x, segments = float(plot_left), []
        for stack in stacks:
            value = totals[label].get(stack)
            if value:
                w = float(value) * scale
                segments.append(Segment(stack, value, round(x, 2), round(w, 2), STRATEGY_COLOURS.get(stack, OTHER_COLOUR)))
                x += w
        bars.append(Bar(label, sum(totals[label].values()), 10 + index * (bar_height + gap), tuple(segments)))
    ticks = []
    tick = Decimal(0)
    while tick <= axis_max:
        ticks.append((round(plot_left + float(tick) * scale, 2), f"{tick.normalize():f}"))
        tick += step
    height = 10 + len(bars) * (bar_height + gap) + 30
    legend = tuple((s, STRATEGY_COLOURS.get(s, OTHER_COLOUR)) for s in stacks)
    return StackedBarChart(tuple(bars), legend, tuple(ticks), width, height, plot_left, plot_width, bar_height, unit)


@dataclass(frozen=True)
class BurnDownChart:
    """A month's spend against its budget: the spent line (cumulative, day by day up to now), the forecast (from
    what is spent now to the forecast at the month's end, dashed) and the budget (a horizontal line)."""

    spent: tuple[tuple[float, float], ...]  # polyline points (x, y)
    forecast: tuple[tuple[float, float], tuple[float, float]]
    budget_y: float
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    width: int
    height: int
    plot_left: int
    plot_top: int
    plot_width: int
    plot_height: int
    unit: str
    over: bool

    @property
    def spent_points(self) -> str:
        return " ".join(f"{x},{y}" for x, y in self.spent)


def burn_down(*, month_start_at, month_end_at, now, daily: Iterable[tuple], budget: Decimal, forecast: Decimal,
              unit: str, width: int = 760, height: int = 260, plot_left: int = 70, plot_top: int = 10) -> BurnDownChart:
    """`daily`: (day, cumulative value at the end of that day) for the days with usage, in order; the line
    reaches the last value at `now` (the day is not over). Values are money or hours, as `unit` says."""
    plot_width, plot_height = width - plot_left - 20, height - plot_top - 30
    total_seconds = (month_end_at - month_start_at).total_seconds()
    now = min(max(now, month_start_at), month_end_at)
    points = list(daily)
    spent_now = points[-1][1] if points else Decimal(0)
    maximum = max(Decimal(budget), Decimal(forecast), Decimal(spent_now))
    step = _nice_step(maximum)
    axis_max = step * max(1, int((maximum / step).to_integral_value(rounding=ROUND_CEILING))) if maximum else step

    def x_of(moment) -> float:
        return round(plot_left + (moment - month_start_at).total_seconds() / total_seconds * plot_width, 2)

    def y_of(value) -> float:
        return round(plot_top + plot_height - float(Decimal(value) / axis_max) * plot_height, 2)

    from datetime import datetime, time, timedelta, timezone as tz

    spent = [(x_of(month_start_at), y_of(0))]
    for day, value in points:
        end_of_day = min(datetime.combine(day, time(), tzinfo=tz.utc) + timedelta(days=1), now)
        spent.append((x_of(end_of_day), y_of(value)))
    if spent[-1][0] < x_of(now):
        spent.append((x_of(now), y_of(spent_now)))
    days = round(total_seconds / 86400)
    x_ticks = tuple((x_of(month_start_at + timedelta(days=d)), str(d + 1)) for d in range(0, days, 7))
    y_ticks, tick = [], Decimal(0)
    while tick <= axis_max:
        y_ticks.append((y_of(tick), f"{tick.normalize():f}"))
        tick += step
    return BurnDownChart(spent=tuple(spent), forecast=((x_of(now), y_of(spent_now)), (x_of(month_end_at), y_of(forecast))),
                         budget_y=y_of(budget), x_ticks=x_ticks, y_ticks=tuple(y_ticks), width=width, height=height,
                         plot_left=plot_left, plot_top=plot_top, plot_width=plot_width, plot_height=plot_height,
                         unit=unit, over=Decimal(forecast) > Decimal(budget))

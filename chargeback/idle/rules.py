"""Idle GPUs and right-sizing: the pure rules (numbers in, findings out; no Django models, no network).

- A request is idle when every evaluation step of its busiest device stayed below the class's threshold since
  `idle_since`, and it has been so for the class's `idle_after`.
- A right-sizing suggestion is the smallest MIG profile of the same GPU model whose memory holds the observed peak
  with headroom and whose compute share covers the median utilisation of what the request holds now.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from gpu.catalogue import Catalogue, mig_equivalents


@dataclass(frozen=True)
class IdleRule:
    threshold_percent: Decimal
    idle_after: timedelta
    release_after: timedelta | None  # None: never released, only flagged


# A class without an IdlePolicy row: flag below 5% for two hours; only development is released (an hour later).
IDLE_DEFAULTS = {
    "training": IdleRule(Decimal("5"), timedelta(hours=2), None),
    "inference": IdleRule(Decimal("5"), timedelta(hours=4), None),
    "development": IdleRule(Decimal("5"), timedelta(hours=2), timedelta(hours=1)),
}

# Observed peak memory x this must fit the suggested slice (allocator growth, a bigger batch).
MEMORY_HEADROOM = Fraction(6, 5)
HOURS_PER_MONTH = Decimal(730)  # 8,760 hours a year / 12


def at_utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def idle_since(points: list[tuple[float, float]], *, threshold: Decimal, step: timedelta) -> datetime | None:
    """The start of the trailing run of steps below `threshold`; None when the last step was busy or there are
    no points. A step's value covers the `step` before its timestamp (max_over_time), so the run starts one step
    before its first point."""
    start = None
    for at, value in reversed(points):
        if Decimal(str(value)) >= threshold:
            break
        start = at
    return None if start is None else at_utc(start) - step


def is_idle(since: datetime | None, *, now: datetime, rule: IdleRule) -> bool:
    return since is not None and now - since >= rule.idle_after


def should_release(*, detected_at: datetime, now: datetime, rule: IdleRule) -> bool:
    return rule.release_after is not None and now - detected_at >= rule.release_after


def percent(value: float) -> Decimal:
    """A utilisation as stored: two decimal places."""
    return Decimal(str(value)).quantize(Decimal("0.01"))


def median(values: list[float]) -> Decimal:
    return Decimal(str(statistics.median(values))).quantize(Decimal("0.01")) if values else Decimal(0)


# --- right-sizing -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Holding:
    """What a request holds: its model, strategy, MIG profile (if any), devices and exact GPU equivalents."""

    gpu_model: str
    strategy: str
    mig_profile: str
    devices: int
    equivalents: Fraction


@dataclass(frozen=True)
class Suggestion:
    mig_profile: str
    equivalents: Fraction
    text: str
    monthly_saving: Decimal | None
    currency: str


def _gb(mib: int) -> str:
    gb = Decimal(mib) / Decimal(1024)
    return f"{gb.quantize(Decimal('1') if gb >= 10 else Decimal('0.1'), rounding=ROUND_HALF_UP).normalize():f}"


def rightsizing(*, holding: Holding, peak_memory_mib: int, memory_total_mib: int, median_percent: Decimal,
                catalogue: Catalogue, price_per_equivalent_hour, equivalents_policy: str = "compute"
                ) -> Suggestion | None:
    """The smallest MIG slice of the same model that would have served what was observed, with what it would save
    a month at the rate cards in force; None when nothing smaller fits. `price_per_equivalent_hour(strategy)`
    returns (price, currency) or None."""
    model = catalogue.models.get(holding.gpu_model)
    if model is None or model.mig is None or holding.devices < 1:
        return None
    needed_gb = float(Fraction(peak_memory_mib) * MEMORY_HEADROOM / 1024)
    # The median is of the busiest device the request holds; its compute need is that share of one device.
    per_device = holding.equivalents / holding.devices
    compute_needed = per_device * Fraction(str(median_percent)) / 100
    candidates = sorted(
        (p for p in model.mig.profiles.values()
         if not p.has_attributes and p.memory_gb >= needed_gb
         and mig_equivalents(p, model.mig, policy=equivalents_policy) >= compute_needed),
        key=lambda p: (mig_equivalents(p, model.mig, policy=equivalents_policy), p.memory_gb, p.name),
    )  # fmt: skip
    if not candidates:
        return None
    best = candidates[0]
    best_equivalents = mig_equivalents(best, model.mig, policy=equivalents_policy)
    if best_equivalents >= holding.equivalents or best.name == holding.mig_profile:
        return None
    now_price, then_price = price_per_equivalent_hour(holding.strategy), price_per_equivalent_hour("mig")
    saving, currency = None, ""
    if now_price and then_price and now_price[1] == then_price[1]:
        now_cost = Decimal(holding.equivalents.numerator) / holding.equivalents.denominator * now_price[0]
        then_cost = Decimal(best_equivalents.numerator) / best_equivalents.denominator * then_price[0]
        saving = ((now_cost - then_cost) * HOURS_PER_MONTH).quantize(Decimal("1"), rounding=ROUND_HALF_UP)
        currency = now_price[1]
    total = memory_total_mib * holding.devices
    text = (f"peak {_gb(peak_memory_mib)} GB of {_gb(total)} GB, median utilisation "
            f"{median_percent.quantize(Decimal('1'), rounding=ROUND_HALF_UP)}%: a {best.name} MIG slice would serve it")
    if saving is not None and saving > 0:
        text += f" for about {currency} {saving:,} a month less"
    elif saving is None:
        text += " (no rate card prices both, so no saving is stated)"
    return Suggestion(mig_profile=best.name, equivalents=best_equivalents, text=text, monthly_saving=saving,
                      currency=currency)

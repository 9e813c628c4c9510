"""An independent model of the report in Python, exact with Fractions: what the SQL must agree with.

It reads the stored intervals and rate cards (not the report), cuts each interval at UTC days and rate changes,
keys the pieces by the report's finest line, rounds each line's cost half away from zero to the cent, and sums
rounded lines per grouping (docs/chargeback.md, "Rounding"). Closed months and adjustments are out of its scope.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from chargeback.models import RateCard, UsageInterval
from chargeback.periods import day_start



def cents(value: Fraction) -> Decimal:
    """Half away from zero, to the cent, from the exact value."""
    sign = -1 if value < 0 else 1
    whole = (abs(value) * 100 * 2 + 1) // 2
    return Decimal(sign * whole) / 100


def _segments(cards: list[RateCard]) -> list[tuple]:
    """(from, to, price or None, currency) for one GPU model and strategy, unpriced before the first card."""
    cards = sorted(cards, key=lambda c: c.valid_from)
    bounds = [day_start(c.valid_from) for c in cards]
    segments = [(None, bounds[0], None, "")]
    for i, card in enumerate(cards):
        segments.append((bounds[i], bounds[i + 1] if i + 1 < len(cards) else None,
                         Fraction(card.price_per_equivalent_hour), card.currency))
    return segments


def lines(*, start, end, now) -> dict[tuple, dict]:
    """Finest lines over [start, end): key -> exact seconds and exact cost (None when unpriced)."""
    window_start, window_end = day_start(start), day_start(end)
    by_rate = defaultdict(list)
    for card in RateCard.objects.all():
        by_rate[(card.gpu_model, card.strategy)].append(card)
    rates = {key: _segments(cards) for key, cards in by_rate.items()}
    result: dict[tuple, dict] = {}
    for interval in UsageInterval.objects.all():
        s = max(interval.started_at, window_start)
        e = min(interval.ended_at or now, window_end)
        day = day_start(s.date())
        while day < e:
            ds, de = max(s, day), min(e, day + timedelta(days=1))
            for seg_from, seg_to, price, currency in rates.get((interval.gpu_model, interval.strategy),
                                                                [(None, None, None, "")]):
                ps = ds if seg_from is None else max(ds, seg_from)
                pe = de if seg_to is None else min(de, seg_to)
                if pe <= ps:
                    continue
                secs = Fraction((pe - ps) // timedelta(microseconds=1), 10**6)
                key = (interval.team_id, interval.cost_center, interval.cluster, interval.strategy,
                       interval.gpu_model, interval.mig_profile, interval.request_id, day.date(),
                       interval.category, currency, seg_from)
                line = result.setdefault(key, {"device_seconds": Fraction(0), "eq_seconds": Fraction(0),
                                               "cost": None if price is None else Fraction(0)})
                line["device_seconds"] += secs * interval.devices
                line["eq_seconds"] += secs * interval.equivalents
                if price is not None:
                    line["cost"] += secs * interval.equivalents * price / 3600
            day += timedelta(days=1)
    return result


_KEY_INDEX = {"team": 0, "cost_center": 1, "cluster": 2, "strategy": 3, "gpu_model": 4, "mig_profile": 5,
              "request": 6, "day": 7}


def rows(all_lines: dict[tuple, dict], group_by) -> dict[tuple, dict]:
    """Per grouping key (+ category, currency): exact seconds and the sum of the lines' rounded costs.
    Team and request stay ids; month is YYYY-MM, day YYYY-MM-DD."""
    grouped: dict[tuple, dict] = {}
    for key, line in all_lines.items():
        group = []
        for name in group_by:
            if name == "month":
                group.append(key[7].strftime("%Y-%m"))
            elif name == "day":
                group.append(key[7].isoformat())
            else:
                group.append(key[_KEY_INDEX[name]])
        group_key = (*group, key[8], key[9])
        row = grouped.setdefault(group_key, {"device_seconds": Fraction(0), "eq_seconds": Fraction(0),
                                             "cost": None if line["cost"] is None else Decimal("0.00")})
        row["device_seconds"] += line["device_seconds"]
        row["eq_seconds"] += line["eq_seconds"]
        if line["cost"] is not None:
            row["cost"] += cents(line["cost"])
    return {k: v for k, v in grouped.items() if v["device_seconds"] or v["eq_seconds"] or v["cost"]}

"""Calendar helpers for half-open UTC periods [start, end) measured in whole days and months."""
from __future__ import annotations

from datetime import date, datetime, timezone


def month_start(day: date) -> date:
    return day.replace(day=1)


def add_months(day: date, months: int) -> date:
    """The first day of the month `months` after the month of `day`."""
    index = day.year * 12 + (day.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)


# The months a period can be about: metering began long after 1970, and the month after the last one must
# still be a date (Python's dates end in 9999-12-31).
FIRST_MONTH = date(1970, 1, 1)
LAST_MONTH = date(9999, 11, 1)


def month_error(month: date) -> str | None:
    """Why `month` cannot be closed or reported on (the message names the range), or None."""
    if not FIRST_MONTH <= month_start(month) <= LAST_MONTH:
        return f"Must be a month from {FIRST_MONTH:%Y-%m} to {LAST_MONTH:%Y-%m}."
    return None


def day_start(day: date) -> datetime:
    """00:00 UTC of a calendar day: the instant a period given as YYYY-MM-DD starts or ends."""
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc)


def period_error(start: date, end: date, *, max_days: int) -> str | None:
    """Why [start, end) is not an acceptable report period (the message names what to change), or None."""
    if end <= start:
        return "Must be after start (the period is [start, end))."
    if (end - start).days > max_days:
        return f"The period may span at most {max_days} days."
    return None

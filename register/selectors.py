"""Reads of the register. `register_build` computes the whole register from the policy, the inventory, the running
workloads and the recorded decisions; it writes nothing, and its query count does not grow with the number of
requests, nodes or pools (each section reads from one shared snapshot plus a few aggregates of its own)."""
from __future__ import annotations

import datetime
from typing import Any

from django.utils import timezone

from portal.errors import InvalidInput, PermissionDenied
from portal.roles import is_platform

from .choices import Verdict
from .sections import BUILDERS
from .sections.common import Snapshot

DEFAULT_DAYS = 30
MAX_DAYS = 365


def register_window(days) -> int:
    """The look-back window in days, 1 to 365; anything else names the field."""
    try:
        value = int(str(days))
    except (TypeError, ValueError):
        raise InvalidInput(f"A whole number of days from 1 to {MAX_DAYS}.", field="days") from None
    if not 1 <= value <= MAX_DAYS:
        raise InvalidInput(f"A whole number of days from 1 to {MAX_DAYS}.", field="days")
    return value


def register_build(*, now: datetime.datetime | None = None, days: int = DEFAULT_DAYS) -> dict[str, Any]:
    """The register as a JSON-ready dict: every section with its items (area, subject, state, verdict, owner,
    signed_off_by, signed_off_at, rationale, evidence, notes)."""
    now = now or timezone.now()
    days = register_window(days)
    snapshot = Snapshot.load(now=now, days=days)
    sections = [build(snapshot).as_dict() for build in BUILDERS]
    counts = {v: sum(s["counts"][v] for s in sections) for v in Verdict.values}
    return {
        "generated_at": now,
        "window": {"days": days, "start": snapshot.start, "end": now},
        "policy_version": snapshot.policy.number if snapshot.policy else None,
        "counts": counts,
        "sections": sections,
    }


def register_for(*, user, now=None, days=DEFAULT_DAYS) -> dict[str, Any]:
    """The register for a caller: it names every team's requests, drafts and their diffs, so it is the platform
    team's."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team reads the decision register.")
    return register_build(now=now, days=days)

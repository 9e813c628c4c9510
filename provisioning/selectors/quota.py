"""A team's quota for one strategy against what its requests hold: one SQL sum, said in numbers and words."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import DecimalField, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from gpu.vocabulary import STRATEGY_ADJECTIVES
from intake.choices import REQUEST_HOLDING
from intake.models import GpuRequest

from ..models import TeamQuota

HOLDING_STATUSES = tuple(str(s) for s in REQUEST_HOLDING)
QUOTA_WORDS = STRATEGY_ADJECTIVES


def _number(value) -> str:
    """36 -> "36", 0.2857 -> "0.286": quota figures as people read them."""
    return f"{Decimal(value):.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class QuotaState:
    team: str
    strategy: str
    limit: Decimal | None  # None: no quota row, unlimited
    held: Decimal
    requested: Decimal

    @property
    def would_hold(self) -> Decimal:
        return self.held + self.requested

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.would_hold > self.limit

    @property
    def message(self) -> str:
        words = QUOTA_WORDS.get(self.strategy, self.strategy)
        if self.limit is None:
            return (f"Team {self.team} has no {words} quota: unlimited (inherited, not a decision); it would hold "
                    f"{_number(self.would_hold)} {words} equivalents: {_number(self.held)} held + "
                    f"{_number(self.requested)} requested.")
        return (f"Team {self.team} would hold {_number(self.would_hold)} of {_number(self.limit)} {words} "
                f"equivalents: {_number(self.held)} held + {_number(self.requested)} requested.")

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy, "limit": float(self.limit) if self.limit is not None else None,
            "inherited": self.limit is None, "held": round(float(self.held), 6),
            "requested": round(float(self.requested), 6), "would_hold": round(float(self.would_hold), 6),
            "exceeded": self.exceeded, "message": self.message,
        }  # fmt: skip


def team_quota_state(*, team, strategy: str, requested, exclude_request_id: int | None = None) -> QuotaState:
    """The team's quota for one strategy and what its requests hold: one SQL sum over the decisions' GPU
    equivalents of its approved, provisioning, running and stalled requests."""
    quota = TeamQuota.objects.filter(team=team, strategy=strategy).values_list("gpu_equivalents", flat=True).first()
    holding = GpuRequest.objects.filter(team=team, strategy=strategy, status__in=HOLDING_STATUSES)
    if exclude_request_id is not None:
        holding = holding.exclude(pk=exclude_request_id)
    held = holding.aggregate(
        total=Sum(Cast(KeyTextTransform("gpu_equivalents", "decision"), DecimalField(max_digits=14, decimal_places=6)))
    )["total"] or Decimal(0)
    return QuotaState(team=team.slug, strategy=strategy, limit=quota, held=Decimal(held),
                      requested=Decimal(str(requested)))

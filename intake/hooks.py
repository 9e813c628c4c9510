"""What the request core asks of the layers above it, filled from their `AppConfig.ready()`, so that intake never
imports them. Only what the core itself needs is here: the workflows (submit, preview, approve, cancel, lease
expiry) live above provisioning and chargeback, in `workflows/`, and call them directly.

- Providers: one function each that only an upper layer can supply, for the decision that intake makes and that
  `provisioning` (work found in the cluster, provisioning/admission.py) also asks for: the inventory snapshot the
  decision places on, its generation, and the team's quota that holds a rule's automatic approval. Calling one
  nobody provided is a programming error, said by name.
- Related rows a request is shown with (`request_shown_with`), for the request selectors every layer reads.
- Decision gates (chargeback's budgets): `register_decision_gate(gate, reads=None)`, where
  `gate(team=, decision=, answers=[, read=]) -> dict` returns the decision (maybe with its automatic approval
  withdrawn and a stable code added to `review_reasons`), run in order whenever a decision is made for a team. A gate
  that must first look something up names it as `reads(team=) -> ScalarSql`: intake reads it in the query that
  reads the decision's stamps and hands the value to the gate as `read`, so a gate with nothing to do costs no
  round trip.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, NamedTuple, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    from decimal import Decimal

    from django.db.models import QuerySet

    from .decisions import Decision, Inventory


class ScalarSql(NamedTuple):
    """A value a layer above reads for intake inside intake's own query: a scalar subquery (one column, at most one
    row) and its parameters. SQL rather than a Django expression: building and compiling expressions for every
    create cost more than the round trip they saved (the stamps query with the budget's id as a Subquery took
    1.8 ms in Python against 0.4 ms in SQL, measured 2026-12-01)."""

    sql: str
    params: tuple = ()


class QuotaReading(Protocol):
    limit: Decimal | None


# Related rows of the layers above that a request is shown with (provisioning: jobs, applied objects, gang stalls):
# relation name -> a function returning the queryset to prefetch it with, ordered.
_SHOWN_WITH: dict[str, Callable[[], QuerySet]] = {}


def request_shown_with(relation: str, queryset: Callable[[], QuerySet]) -> None:
    """Load `relation` (a reverse relation to GpuRequest) wherever a request is shown in full (intake.selectors)."""
    _SHOWN_WITH[relation] = queryset


def request_relations_shown() -> dict[str, Callable[[], QuerySet]]:
    return dict(_SHOWN_WITH)


P = ParamSpec("P")
R = TypeVar("R")


class Provider(Generic[P, R]):
    """A function an upper layer supplies from its `ready()`; intake calls the provider as it would the function."""

    def __init__(self, name: str):
        self.name = name
        self._function: Callable[P, R] | None = None

    def provide(self, function: Callable[P, R]) -> None:
        self._function = function  # replaced, not doubled, by a second ready()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._function is None:
            raise RuntimeError(f"nothing provides {self.name}: is the app that provides it in INSTALLED_APPS?")
        return self._function(*args, **kwargs)


# The clusters and pools the decision places on (provisioning.selectors.inventory_snapshot).
inventory_snapshot: Provider[[], Inventory] = Provider("inventory_snapshot")
# A value that changes with every write to what inventory_snapshot reads (intake.decision_cache's key).
inventory_generation: Provider[[], ScalarSql] = Provider("inventory_generation")
# The team's quota on a strategy and what its requests hold (provisioning.selectors.team_quota_state; keyword
# arguments team, strategy, requested): the automatic-approval gate reads `limit` (None: no quota row).
team_quota_state: Provider[..., QuotaReading] = Provider("team_quota_state")


# --- decision gates ---

@dataclass(frozen=True)
class DecisionGate:
    gate: Callable[..., dict]
    reads: Callable[..., ScalarSql] | None = None

    @property
    def name(self) -> str:
        return f"gate_read_{self.gate.__module__.replace('.', '_')}_{self.gate.__name__}"


DECISION_GATES: list[DecisionGate] = []


def register_decision_gate(gate: Callable[..., dict], *, reads: Callable[..., ScalarSql] | None = None) -> None:
    if all(known.gate is not gate for known in DECISION_GATES):
        DECISION_GATES.append(DecisionGate(gate=gate, reads=reads))


def decision_gate_reads(*, team) -> dict[str, ScalarSql]:
    """What the gates read first for this team, by name, to read beside the decision's stamps."""
    return {known.name: known.reads(team=team) for known in DECISION_GATES if known.reads is not None}


def decision_gated(*, team, decision: Decision, answers: dict, read: dict | None = None) -> Decision:
    """The decision through every gate in turn. `read` holds what `decision_gate_reads` named, as read; a gate whose
    value is not in it looks it up itself."""
    for known in DECISION_GATES:
        if read is not None and known.name in read:
            decision = known.gate(team=team, decision=decision, answers=answers, read=read[known.name])
        else:
            decision = known.gate(team=team, decision=decision, answers=answers)
    return decision

"""What intake announces to the layers above it and what it asks of them, filled from their `AppConfig.ready()`,
so that intake never imports them.

- Status hooks: the request state machine announces each status it enters (provisioning: "on entering approved,
  enqueue the apply job"). They run inside the transition's transaction, under the request's row lock, in the order
  they were registered; work they cause is dispatched after commit (`transaction.on_commit`).
- Providers: one function each that only an upper layer can supply (provisioning: the inventory snapshot the
  decision reads, the team's quota, the preview's rendered objects). Calling one nobody provided is a programming
  error, said by name.
- Decision gates and review sections (chargeback's budgets): `register_decision_gate(gate, reads=None)`, where
  `gate(team=, decision=, answers=[, read=]) -> dict` returns the decision (maybe with its automatic approval
  withdrawn and a stable code added to `review_reasons`), run in order whenever a decision is made for a team. A gate
  that must first look something up names it as `reads(team=) -> ScalarSql`: intake reads it in the query that
  reads the decision's stamps and hands the value to the gate as `read`, so a gate with nothing to do costs no
  round trip. And `register_review_section(section)`, where `section(gpu_request=) -> {"title", "html"} | None`
  adds to the review page; `register_preview_section(section)`, where `section(team=, decision=, answers=)` does the
  same for the preview (chargeback: the projected GPU-hours and cost).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, NamedTuple, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:
    from decimal import Decimal

    from django.db.models import QuerySet

    from .decisions import Decision, Inventory
    from .models import GpuRequest


class ScalarSql(NamedTuple):
    """A value a layer above reads for intake inside intake's own query: a scalar subquery (one column, at most one
    row) and its parameters. SQL rather than a Django expression: building and compiling expressions for every
    create cost more than the round trip they saved (the stamps query with the budget's id as a Subquery took
    1.8 ms in Python against 0.4 ms in SQL, measured 2026-12-01)."""

    sql: str
    params: tuple = ()


class QuotaReading(Protocol):
    limit: Decimal | None


class EnteringHook(Protocol):
    def __call__(self, *, gpu_request: GpuRequest, from_status: str) -> None: ...


_ON_ENTERING: dict[str, dict[str, EnteringHook]] = {}


def on_entering(status: str, name: str, hook: EnteringHook) -> None:
    """Run `hook` whenever a request enters `status`. Registered by `name`, so a second `ready()` (tests) replaces
    rather than doubles it."""
    _ON_ENTERING.setdefault(status, {})[name] = hook


def entering_hooks(status: str) -> list[Callable[..., None]]:
    return list(_ON_ENTERING.get(status, {}).values())


def announce_entering(gpu_request: GpuRequest, *, from_status: str, to_status: str) -> None:
    """Called by `request_transition` and `request_transition_many` once the new status is saved."""
    for hook in entering_hooks(to_status):
        hook(gpu_request=gpu_request, from_status=from_status)


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
# Does a request fit its pool now, with its projected GPU-hours and the team's quota
# (provisioning.selectors.request_fit; keyword arguments gpu_request and, for team visibility, user).
request_fit: Provider[..., dict] = Provider("request_fit")
# Why an approved request waits and when it will start, as last read (provisioning.selectors.request_wait;
# keyword argument gpu_request).
request_wait: Provider[..., object] = Provider("request_wait")
# The team's quota on a strategy and what its requests hold (provisioning.selectors.team_quota_state; keyword
# arguments team, strategy, requested): the automatic-approval gate reads `limit` (None: no quota row).
team_quota_state: Provider[..., QuotaReading] = Provider("team_quota_state")
# The objects a previewed request would get and the names they will have, as (objects, ["Kind name", ...])
# (provisioning.preview.preview_objects; keyword arguments team, name, answers, decision). Answers that cannot be
# rendered are the caller's mistake: InvalidInput on `answers`.
preview_objects: Provider[..., tuple[list[dict], list[str]]] = Provider("preview_objects")
# The right-sizing suggestion from what a request's GPUs did (chargeback.idle.selectors.rightsizing_get; keyword
# argument gpu_request).
request_rightsizing: Provider[..., object] = Provider("request_rightsizing")
# The GPU-hours a request has used so far, as metered, with their cost (chargeback.selectors.request_usage_so_far;
# keyword argument gpu_request).
request_usage: Provider[..., dict] = Provider("request_usage")
# How to reach a request's workload: its namespace, Services and kubectl lines (provisioning.selectors.request_access;
# keyword argument gpu_request); None before anything is applied.
request_access: Provider[..., dict | None] = Provider("request_access")


# --- decision gates and review sections ---

@dataclass(frozen=True)
class DecisionGate:
    gate: Callable[..., dict]
    reads: Callable[..., ScalarSql] | None = None

    @property
    def name(self) -> str:
        return f"gate_read_{self.gate.__module__.replace('.', '_')}_{self.gate.__name__}"


DECISION_GATES: list[DecisionGate] = []
REVIEW_SECTIONS: list[Callable[..., dict | None]] = []
# The preview's further sections (chargeback: GPU-hours and cost): `section(team=, decision=, answers=)` ->
# {"title", "html"} | None, shown under the decision before anything is submitted.
PREVIEW_SECTIONS: list[Callable[..., dict | None]] = []


def register_decision_gate(gate: Callable[..., dict], *, reads: Callable[..., ScalarSql] | None = None) -> None:
    if all(known.gate is not gate for known in DECISION_GATES):
        DECISION_GATES.append(DecisionGate(gate=gate, reads=reads))


def register_review_section(section: Callable[..., dict | None]) -> None:
    if section not in REVIEW_SECTIONS:
        REVIEW_SECTIONS.append(section)


def register_preview_section(section: Callable[..., dict | None]) -> None:
    if section not in PREVIEW_SECTIONS:
        PREVIEW_SECTIONS.append(section)


def preview_sections(*, team, decision: dict, answers: dict) -> list[dict]:
    return [shown for section in PREVIEW_SECTIONS if (shown := section(team=team, decision=decision, answers=answers))]


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

"""The placement decision as a type: what `decide()` returns, what a request stores (`GpuRequest.decision`) and
what every reader uses -- rendering, the fit check, metering, quota, budgets, the register, the pages and the API.

Django-free. A decision is stored as JSON (`to_json()`), stamped with `DECISION_VERSION`; `from_json()` reads every
shape a request may hold: the current one, version 1 (before `priority`: read as None, the scheduler's
defaults inherited), and the unversioned snapshots written before the type existed (version
0), whose keys arrived one by one (`gpu_product`, `memory_limit_gb`, `multi_node`, `lease`, `dra_extended_resource`,
`review_reasons`, `auto_approve_limits`, `driver.branch`, `budget`) and which tests and benchmarks also write in
part. A key missing from a stored decision takes the value its readers assumed when it was absent (listed with each
field below). An unknown key or a newer version is refused: a reader must not silently drop what it cannot read.

This module is the only place a decision's JSON is read or written by key (tests/test_decision_keys.py checks it).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

DECISION_VERSION = 2  # 2: `priority`
VERSION_KEY = "version"


class DecisionShapeError(ValueError):
    """A stored decision this portal cannot read (an unknown key, a newer version, a wrong type)."""


@dataclass(frozen=True)
class Reason:
    """Why one field of the decision is what it is, and where that came from (`policy`, `answer`, `default`,
    `cluster`; a rule's key when a rule decided)."""

    field: str
    text: str
    source: str
    rule: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reason:
        return cls(field=data["field"], text=data["text"], source=data["source"], rule=data.get("rule"))

    def to_json(self) -> dict:
        return {"field": self.field, "text": self.text, "source": self.source, "rule": self.rule}


@dataclass(frozen=True)
class Gang:
    """All `min_members` pods start together or none does, through `backend` (gpu.vocabulary.GANG_BACKENDS)."""

    min_members: int
    backend: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Gang:
        return cls(min_members=data["min_members"], backend=data["backend"])

    def to_json(self) -> dict:
        return {"min_members": self.min_members, "backend": self.backend}


@dataclass(frozen=True)
class MultiNode:
    """How a multi-pod job fails (`restart`: gpu.gangapi.RESTART_*), where it is packed, and whether it gets a
    ComputeDomain of its own."""

    restart: str | None
    topology: str | None
    compute_domain: bool
    # A multi-pod NVLink gang without a topology-aware gang: its first pod may take any clique (absent: False).
    placement_may_stall: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MultiNode:
        return cls(restart=data.get("restart"), topology=data.get("topology"),
                   compute_domain=bool(data.get("compute_domain")),
                   placement_may_stall=bool(data.get("placement_may_stall")))

    def to_json(self) -> dict:
        return {"restart": self.restart, "topology": self.topology, "compute_domain": self.compute_domain,
                "placement_may_stall": self.placement_may_stall}


@dataclass(frozen=True)
class DriverTerms:
    """The NVIDIA driver floor the pods need, and the release branch a rule keeps them on (None: any)."""

    min_major: int
    branch: int | None = None  # absent before rules could pin a branch

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DriverTerms:
        return cls(min_major=data["min_major"], branch=data.get("branch"))

    def to_json(self) -> dict:
        return {"min_major": self.min_major, "branch": self.branch}


@dataclass(frozen=True)
class Lease:
    """How long the grant lasts from approval, the most time left an extension may reach, and the rule that set it
    (None: only the engineer's answer)."""

    hours: float
    max_hours: float | None = None
    rule: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Lease:
        return cls(hours=data["hours"], max_hours=data.get("max_hours"), rule=data.get("rule"))

    def to_json(self) -> dict:
        return {"hours": self.hours, "max_hours": self.max_hours, "rule": self.rule}


@dataclass(frozen=True)
class Priority:
    """Who the work yields GPUs to, decided per workload class by a policy rule (`rule`): its tier
    (gpu.vocabulary.PRIORITY_TIERS), whether it may be preempted at all, whether it may preempt lower tiers
    (False: PriorityClass `preemptionPolicy: Never`), the minimum runtime before it may be preempted (None: none
    asked) and whether the cluster's scheduler enforces it, and the seconds between SIGTERM and SIGKILL it gets to
    checkpoint (terminationGracePeriodSeconds). A decision without one (None) inherits the scheduler's defaults."""

    tier: str
    preemptible: bool
    grace_seconds: int
    preempts: bool = True
    min_runtime_minutes: int | None = None
    min_runtime_enforced: bool = False
    rule: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Priority:
        _refuse_unknown(data, {f.name for f in fields(cls)}, "priority")
        return cls(tier=data["tier"], preemptible=bool(data["preemptible"]), grace_seconds=int(data["grace_seconds"]),
                   preempts=bool(data.get("preempts", True)), min_runtime_minutes=data.get("min_runtime_minutes"),
                   min_runtime_enforced=bool(data.get("min_runtime_enforced")), rule=data.get("rule"))

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class ApprovalLimits:
    """The deciding rule's caps on its automatic approval (intake.policy.AUTO_APPROVE_LIMIT_KEYS); None: the rule
    sets no such cap. Stored with only the caps the rule sets."""

    per_request: float | None = None
    per_team: float | None = None
    without_quota: bool | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ApprovalLimits:
        data = data or {}
        _refuse_unknown(data, {f.name for f in fields(cls)}, "auto_approve_limits")
        return cls(per_request=data.get("per_request"), per_team=data.get("per_team"),
                   without_quota=data.get("without_quota"))

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class Decision:
    """Where a request runs and on what terms, with a reason for each field. Every field has the default a
    decision stored before it existed is read with."""

    strategy: str = ""
    gpu_model: str = ""
    gpu_product: str = ""  # absent in early snapshots: the renderer falls back to the catalogue's product name
    mig_profile: str | None = None
    gpus_per_replica: int = 1
    replicas: int = 1
    memory_isolation: str = ""
    memory_limit_gb: float | None = None  # MPS only: the per-client device memory limit
    fabric_isolation: str = ""
    gang: Gang | None = None
    multi_node: MultiNode | None = None
    driver: DriverTerms | None = None
    lease: Lease | None = None
    priority: Priority | None = None  # absent before version 2: the scheduler's defaults, inherited
    cluster: str = ""
    node_pool: str = ""
    scheduling_model: str = ""  # absent: the pool's effective scheduling model (the fit check reads it so)
    dra_extended_resource: str | None = None
    policy_version: int | None = None
    rule: str | None = None  # the route rule that decided; None: the platform default
    guardrails: tuple[str, ...] = ()
    auto_approve: bool = False
    review_reasons: tuple[str, ...] = ()  # stable codes: why a rule's automatic approval did not hold
    auto_approve_limits: ApprovalLimits = field(default_factory=ApprovalLimits)
    gpu_equivalents_per_replica: float = 0.0
    gpu_equivalents: float = 0.0
    reasons: tuple[Reason, ...] = ()
    summary: str = ""
    # The team's budget forecast with this request approved too, as chargeback wrote it at the time of the
    # decision (chargeback.budgets.Forecast.as_dict() plus `words`); None: no budget. Chargeback's shape.
    budget: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """A decision from its stored JSON, of any version up to DECISION_VERSION."""
        if isinstance(data, Decision):
            return data
        if not isinstance(data, Mapping):
            raise DecisionShapeError(f"a decision is a JSON object, not {type(data).__name__}")
        version = data.get(VERSION_KEY, 0)
        if not isinstance(version, int) or not 0 <= version <= DECISION_VERSION:
            raise DecisionShapeError(f"decision version {version!r}: this portal reads versions 0 to "
                                     f"{DECISION_VERSION}")
        _refuse_unknown(data, _JSON_KEYS | {VERSION_KEY}, "decision")
        try:
            return cls(**{name: read(data[name]) for name, read in _READERS.items() if name in data})
        except (KeyError, TypeError) as exc:
            raise DecisionShapeError(f"decision: {exc}") from None

    def to_json(self, only: Iterable[str] | None = None) -> dict:
        """The decision as stored and as the API shows it; `only` picks some fields (a name not a field raises)."""
        if only is not None:
            return {name: _WRITERS[name](getattr(self, name)) for name in only}
        return {VERSION_KEY: DECISION_VERSION,
                **{name: write(getattr(self, name)) for name, write in _WRITERS.items()}}

    def reasons_for(self, field_name: str) -> tuple[Reason, ...]:
        """The reasons given for one field, in the order they were added."""
        return tuple(r for r in self.reasons if r.field == field_name)

    def held_for_review(self, *, code: str, text: str) -> Decision:
        """The decision with the rule's automatic approval withheld: `code` joins the review reasons and `text`
        becomes the approval reason. The summary is the caller's to redraw (intake.decisions.summarise)."""
        return replace(self, auto_approve=False, review_reasons=(*self.review_reasons, code),
                       reasons=tuple(replace(r, text=text) if r.field == "approval" else r for r in self.reasons))


def _refuse_unknown(data: Mapping[str, Any], known: set[str], what: str) -> None:
    unknown = set(data) - known
    if unknown:
        raise DecisionShapeError(f"{what}: unknown keys {sorted(unknown)}")


def _optional(kind):
    return lambda value: None if value is None else kind.from_json(value)


def _same(value):
    return value


def _json_of(value):
    return None if value is None else value.to_json()


_READERS = {f.name: _same for f in fields(Decision)}
_READERS.update(
    gang=_optional(Gang), multi_node=_optional(MultiNode), driver=_optional(DriverTerms), lease=_optional(Lease),
    priority=_optional(Priority),
    auto_approve_limits=ApprovalLimits.from_json, guardrails=tuple, review_reasons=tuple,
    reasons=lambda items: tuple(Reason.from_json(r) for r in items),
    budget=lambda value: None if value is None else dict(value),
)
_WRITERS = {f.name: _same for f in fields(Decision)}
_WRITERS.update(
    gang=_json_of, multi_node=_json_of, driver=_json_of, lease=_json_of, priority=_json_of, auto_approve_limits=_json_of,
    guardrails=list, review_reasons=list, reasons=lambda items: [r.to_json() for r in items],
    budget=lambda value: None if value is None else dict(value),
)
_JSON_KEYS = set(_READERS)

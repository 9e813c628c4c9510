"""What every section shares: the item shape, and one snapshot of what the register reads (loaded once, in a
fixed number of queries whatever the number of requests, nodes or pools)."""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch

from gpu.vocabulary import BOTH, DEVICE_PLUGIN, DRA, NATIVE
from intake.choices import PolicyStatus
from intake.models import GpuRequest, PolicyVersion, Rule
from intake.words import GANG_BACKEND_WORDS
from provisioning.models import Cluster, Node, NodePool
from provisioning.selectors import HOLDING_STATUSES

from ..choices import UpgradeStatus, Verdict
from ..models import DriverUpgradePlan, PlatformDecision

NOBODY = "nobody"


@dataclass
class Item:
    """One line of the register: a decision area about one subject, its state, the verdict and the evidence.
    `notes` says the evidence in plain words (what the page and the Markdown show)."""

    area: str
    subject: str
    state: str
    verdict: str
    owner: str | None = None
    signed_off_by: str | None = None
    signed_off_at: datetime.datetime | None = None
    rationale: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "area": self.area, "subject": self.subject, "state": self.state, "verdict": self.verdict,
            "owner": self.owner, "signed_off_by": self.signed_off_by, "signed_off_at": self.signed_off_at,
            "rationale": self.rationale, "evidence": self.evidence, "notes": list(self.notes),
        }  # fmt: skip


@dataclass
class SectionResult:
    key: str
    title: str
    items: list[Item]
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        counts = {v: sum(1 for i in self.items if i.verdict == v) for v in Verdict.values}
        return {"area": self.key, "title": self.title, "counts": counts, "summary": self.summary,
                "notes": list(self.notes), "items": [i.as_dict() for i in self.items]}


@dataclass
class Snapshot:
    """Everything the sections read, loaded once."""

    now: datetime.datetime
    days: int
    clusters: list[Cluster]
    decisions: dict[tuple[str, int, int | None], PlatformDecision]
    plans: list[DriverUpgradePlan]
    live_requests: list[GpuRequest]
    policy: PolicyVersion | None
    # (policy version number, rule key) -> the rule's sign-off, for requests decided under any version.
    rule_signoffs: dict[tuple[int, str], dict]

    @property
    def start(self) -> datetime.datetime:
        return self.now - datetime.timedelta(days=self.days)

    @classmethod
    def load(cls, *, now: datetime.datetime, days: int) -> Snapshot:
        nodes = Node.objects.filter(present=True).defer("labels", "allocatable", "capacity", "dra_devices") \
            .order_by("name")
        pools = NodePool.objects.select_related("gpu_model").order_by("name")
        clusters = list(Cluster.objects.prefetch_related(
            Prefetch("pools", queryset=pools), Prefetch("nodes", queryset=nodes)).order_by("name"))
        decisions = {(d.area, d.cluster_id, d.pool_id): d for d in PlatformDecision.objects.all()}
        plans = list(DriverUpgradePlan.objects.filter(status=UpgradeStatus.PLANNED).order_by("planned_for", "id"))
        live = list(GpuRequest.objects.filter(status__in=HOLDING_STATUSES)
                    .select_related("team", "requested_by").prefetch_related("team__gpu_quotas").order_by("id"))
        policy = (PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE)
                  .prefetch_related(Prefetch("rules", queryset=Rule.objects.order_by("kind", "position", "key")))
                  .first())
        signoffs = {
            (number, key): {"owner": owner, "signed_off_by": by or None, "signed_off_at": at}
            for number, key, owner, by, at in Rule.objects.values_list(
                "version__number", "key", "owner", "signed_off_by", "signed_off_at")
        }
        return cls(now=now, days=days, clusters=clusters, decisions=decisions, plans=plans, live_requests=live,
                   policy=policy, rule_signoffs=signoffs)

    def decision(self, area: str, cluster: Cluster, pool: NodePool | None = None) -> PlatformDecision | None:
        return self.decisions.get((area, cluster.pk, pool.pk if pool else None))

    def decision_for_pool(self, area: str, cluster: Cluster, pool: NodePool) -> tuple[PlatformDecision | None, str]:
        """The pool's own decision, else the cluster's (which pools without one follow); and its scope."""
        own = self.decision(area, cluster, pool)
        if own is not None:
            return own, "pool"
        whole = self.decision(area, cluster)
        return whole, ("cluster" if whole is not None else "")

    def rule_signed(self, policy_version: int | None, key: str | None) -> bool:
        found = self.rule_signoffs.get((policy_version, key)) if key else None
        return bool(found and found["signed_off_at"])


def decision_fields(decision: PlatformDecision | None) -> dict[str, Any]:
    """owner / signed_off_by / signed_off_at / rationale of an item from a signed-off decision (else empty)."""
    if decision is None or not decision.is_signed_off:
        return {"owner": None, "signed_off_by": None, "signed_off_at": None, "rationale": ""}
    return {"owner": decision.owner, "signed_off_by": decision.signed_off_by_name,
            "signed_off_at": decision.signed_off_at, "rationale": decision.rationale}


def decision_evidence(decision: PlatformDecision | None, scope: str = "") -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "id": decision.pk, "scope": scope or ("pool" if decision.pool_id else "cluster"),
        "value": decision.decided_value, "owner": decision.owner, "signed_off": decision.is_signed_off,
        "signed_off_by": decision.signed_off_by_name or None, "signed_off_at": decision.signed_off_at,
        "rationale": decision.rationale,
    }  # fmt: skip


# Decided values in words (scheduling models and gang backends).
VALUE_WORDS = {DEVICE_PLUGIN: "device plugin", DRA: "DRA", BOTH: "both device plugin and DRA",
               **GANG_BACKEND_WORDS, NATIVE: "native Workload API"}


def draft_note(decision: PlatformDecision | None) -> list[str]:
    if decision is not None and not decision.is_signed_off:
        value = decision.decided_value
        what = f" ({VALUE_WORDS.get(value, value)})" if value else ""
        return [f"A decision{what} owned by {decision.owner} is recorded but not signed off, so it does not count."]
    return []


def words(value: str | None) -> str:
    return (value or "").replace("_", " ")


def plural(count: int, singular: str, many: str | None = None) -> str:
    return f"{count} {singular if count == 1 else (many or singular + 's')}"


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]

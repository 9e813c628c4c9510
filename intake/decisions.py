"""The placement decision: a pure function of (answers, policy, inventory) -> decision.

Nothing here touches the database. The same function serves the preview, the request, and the re-evaluation of
old requests under a new policy version. Every field of the decision carries a reason saying where it came
from: `policy` (a rule, named), `answer` (the engineer asked for it) or `default` (nothing chose it; the platform
inherited it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from portal.text import plural
from gpu.catalogue import Catalogue, MigProfileSpec
from gpu.vocabulary import MEMORY_ISOLATION, MIG, MPS, REPLICATED, STRATEGY_ADJECTIVES, STRATEGY_WORDS
from gpu.vocabulary import SHARING_MODE_FOR_STRATEGY as SHARING_MODE
from gpu import gangapi
from gpu.pools import PoolSpec
from gpu.vocabulary import TIME_SLICING, WHOLE_GPU

from .multinode import multi_node_decision
from .words import GANG_BACKEND_WORDS

PLATFORM_DEFAULT_STRATEGY = WHOLE_GPU


@dataclass(frozen=True)
class Answers:
    workload_class: str
    tenancy: str
    latency: str
    gpu_memory_gb: float
    image: str
    data_sensitivity: str = "standard"
    gpus_per_replica: int = 1
    replicas: int = 1
    min_driver_major: int | None = None
    command: tuple[str, ...] = ()
    expected_hours: float | None = None
    lease_hours: float | None = None
    defaulted: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, values: dict[str, Any], defaulted=()) -> Answers:
        data = dict(values)
        data["command"] = tuple(data.get("command") or ())
        return cls(**data, defaulted=frozenset(defaulted))

    def get(self, key: str) -> Any:
        return getattr(self, key)


@dataclass(frozen=True)
class RuleSpec:
    key: str
    kind: str  # route | guardrail
    match: dict[str, tuple[str, ...]]
    outcome: dict[str, Any]
    rationale: str
    owner: str
    position: int = 0
    id: int | None = None

    @property
    def specificity(self) -> int:
        return len(self.match)

    def matches(self, answers: Answers) -> bool:
        return all(answers.get(key) in values for key, values in self.match.items())


@dataclass(frozen=True)
class PolicySpec:
    version: int
    rules: tuple[RuleSpec, ...]

    def routes(self) -> list[RuleSpec]:
        return [r for r in self.rules if r.kind == "route"]

    def guardrails(self) -> list[RuleSpec]:
        return sorted((r for r in self.rules if r.kind == "guardrail"), key=lambda r: (r.position, r.key))


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    kubernetes_version: str
    scheduling_model: str
    gang_scheduler: str
    pools: tuple[PoolSpec, ...]
    id: int | None = None
    feature_gates: tuple[str, ...] = ()
    jobset: bool = False
    gang_topology_key: str = ""
    gang_topology_name: str = ""

    @property
    def has_gang_scheduler(self) -> bool:
        return self.gang_scheduler != "none"

    @property
    def minor(self) -> int:
        return int(str(self.kubernetes_version).split(".")[1])

    def gang_refusal(self) -> str | None:
        """Why this cluster's gang backend cannot run a gang as declared (the native API's gates), or None."""
        if self.gang_scheduler == "native":
            return gangapi.native_gang_refusal(self.minor, self.feature_gates, self.name)
        return None


@dataclass(frozen=True)
class Inventory:
    clusters: tuple[ClusterSpec, ...]
    catalogue: Catalogue

    def pools(self):
        for cluster in self.clusters:
            for pool in cluster.pools:
                yield cluster, pool


class PlacementImpossible(Exception):
    """No pool can serve these answers. `field` names the answer to change."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass
class _Reasons:
    items: list[dict] = field(default_factory=list)

    def add(self, field_name: str, text: str, rule: RuleSpec | None = None, *, source: str | None = None):
        self.items.append(
            {
                "field": field_name,
                "text": text,
                "source": source or ("policy" if rule else "default"),
                "rule": rule.key if rule else None,
            }
        )


@dataclass(frozen=True)
class _Candidate:
    cluster: ClusterSpec
    pool: PoolSpec
    profile: MigProfileSpec | None
    gpu_memory_gb: float  # what one device holds for this request (an MPS client: its memory limit)


def select_route(policy: PolicySpec, answers: Answers) -> RuleSpec | None:
    """Most specific matching route wins; ties go to the lower position, then the key (deterministic)."""
    matching = [r for r in policy.routes() if r.matches(answers)]
    return min(matching, key=lambda r: (-r.specificity, r.position, r.key), default=None)


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _gb(value: float) -> str:
    return f"{value:g} GB"


@dataclass(frozen=True)
class DriverNeed:
    """The NVIDIA driver a request needs: the strictest floor of the engineer's answer and the matching rules, and
    the release branch a rule pins the class to. `floor_from` / `branch_from` are the rule that set them (None:
    the engineer's answer)."""

    min_major: int | None = None
    branch: int | None = None
    floor_from: RuleSpec | None = None
    branch_from: RuleSpec | None = None
    answered: int | None = None

    def allows(self, driver_major: int | None) -> bool:
        if self.min_major and (driver_major or 0) < self.min_major:
            return False
        return not self.branch or driver_major == self.branch

    def words(self) -> str:
        return f"driver {self.branch} branch" if self.branch else f"driver {self.min_major} or newer"


def driver_need(answers: Answers, route: RuleSpec | None, guardrails: list[RuleSpec]) -> DriverNeed:
    """Driver floors from the answer, the route and the matching guardrails: the stricter wins; a guardrail's
    branch wins over the route's. A floor above the pinned branch can never be met."""
    floor, floor_from = answers.min_driver_major, None
    branch, branch_from = None, None
    for rule in ([route] if route else []) + guardrails:
        wanted = rule.outcome.get("driver") or {}
        if wanted.get("min_major") and wanted["min_major"] > (floor or 0):
            floor, floor_from = wanted["min_major"], rule
        if wanted.get("branch"):
            branch, branch_from = wanted["branch"], rule
    if branch and floor and floor > branch:
        who = "you asked for" if floor_from is None else f"rule {floor_from.key} sets"
        raise PlacementImpossible(
            f"Rule {branch_from.key} keeps this kind of workload on the NVIDIA {branch} driver branch, but {who} "
            f"driver {floor} or newer: no node can meet both. Ask for a floor of {branch} or lower.",
            field="min_driver_major",
        )
    if branch and not floor:
        floor = branch
    return DriverNeed(min_major=floor, branch=branch, floor_from=floor_from, branch_from=branch_from,
                      answered=answers.min_driver_major)


@dataclass(frozen=True)
class _Skipped:
    """A pool that offers the strategy and the memory but can never hold the request as asked."""

    pool: str
    why: str
    field: str  # the answer to change


# What one replica's devices are called, per strategy, to say why a pool is too small.
_UNIT = {WHOLE_GPU: "GPU", MIG: "slice", TIME_SLICING: "time-sliced share", MPS: "MPS share"}


def _devices_per_node(strategy: str, pool: PoolSpec, profile: MigProfileSpec | None) -> int:
    if strategy == MIG:
        return pool.mig_profiles.get(profile.name, 0) * pool.gpus_per_node
    if strategy in REPLICATED:
        return pool.gpus_per_node * (pool.time_slicing_replicas or 1)
    return pool.gpus_per_node


def _size_refusal(strategy: str, pool: PoolSpec, profile: MigProfileSpec | None, answers: Answers) -> _Skipped | None:
    """Why the pool can never hold every replica at once, even empty; None when it can."""
    name = f"{pool.cluster}/{pool.name}"
    per_node = _devices_per_node(strategy, pool, profile)
    unit = f"{profile.name} slice" if profile else _UNIT[strategy]
    if per_node < answers.gpus_per_replica:
        return _Skipped(name, f"its nodes have {plural(per_node, unit)} each and a replica needs "
                              f"{answers.gpus_per_replica} on one node", "gpus_per_replica")
    most = (per_node // answers.gpus_per_replica) * pool.node_count
    if most < answers.replicas:
        return _Skipped(name, f"{plural(pool.node_count, 'node')} of {plural(per_node, unit)} hold at most "
                              f"{most} of the {answers.replicas} replicas", "replicas")
    return None


def _candidates(strategy: str, answers: Answers, inventory: Inventory, allowed_models,
                driver: DriverNeed) -> tuple[list[_Candidate], list[_Skipped]]:
    per_device = answers.gpu_memory_gb / answers.gpus_per_replica
    found, skipped = [], []
    for cluster, pool in inventory.pools():
        if pool.sharing_mode != SHARING_MODE[strategy]:
            continue
        if allowed_models and pool.gpu_model not in allowed_models:
            continue
        if pool.gpu_model not in inventory.catalogue.models:
            continue
        model = inventory.catalogue.model(pool.gpu_model)
        if not driver.allows(pool.driver_major):
            continue
        profile = None
        if strategy == MIG:
            if model.mig is None:
                continue
            profile = model.mig.smallest_profile_covering(per_device, offered=set(pool.mig_profiles))
            if profile is None:
                continue
            memory = profile.memory_gb
        elif strategy == MPS:
            # The device plugin fails MPS requests for more than one share (failRequestsGreaterThanOne).
            if pool.scheduling_model != "dra" and answers.gpus_per_replica > 1:
                continue
            # The MPS control daemon caps each client at 1/replicas of the GPU's memory, unlike time-slicing.
            memory = model.memory_gb / (pool.time_slicing_replicas or 1)
            if memory < per_device:
                continue
        else:
            if model.memory_gb < per_device:
                continue
            memory = model.memory_gb
        refusal = _size_refusal(strategy, pool, profile, answers)
        if refusal:
            skipped.append(refusal)
            continue
        found.append(_Candidate(cluster=cluster, pool=pool, profile=profile, gpu_memory_gb=memory))
    return found, skipped


# One CUDA process enumerates one MIG device and slices have no P2P/NVLink between them; a time-sliced (or MPS)
# share asked for twice can be the same GPU twice (NCCL "Duplicate GPU"), and the device plugin's
# failRequestsGreaterThanOne refuses it (k8s-device-plugin v0.20 api/config/v1/config.go).
ONE_DEVICE_PER_REPLICA = {
    MIG: "a CUDA process sees one MIG device, and slices have no NVLink or peer-to-peer path between them",
    TIME_SLICING: "two shares may be the same GPU twice, and the device plugin refuses a request for more than one",
    MPS: "two MPS shares may be the same GPU twice, and the device plugin refuses more than one for MPS by default",
}


def _rank(candidate: _Candidate) -> tuple:
    # Smallest device that fits first (keep big GPUs for big work), then stable names.
    slices = candidate.profile.compute_slices if candidate.profile else 0
    return (candidate.gpu_memory_gb, slices, candidate.cluster.name, candidate.pool.name)


def _equivalents(strategy: str, candidate: _Candidate, inventory: Inventory, count: int) -> Fraction:
    if strategy == MIG:
        mig = inventory.catalogue.model(candidate.pool.gpu_model).mig
        return Fraction(candidate.profile.compute_slices, mig.total_slices) * count
    if strategy in REPLICATED:
        return Fraction(count, candidate.pool.time_slicing_replicas or 1)
    return Fraction(count)


def _dra_extended_resource(strategy: str, candidate: _Candidate, answers: Answers) -> str | None:
    """The extended resource a DRA request is rendered with, when its pool's DeviceClass serves one for these
    devices; None keeps the claim template. A driver floor needs the claim's CEL selector (extended resources carry
    none); time-sliced requests keep their claim (the driver's sharing config lives there)."""
    if answers.min_driver_major or strategy == TIME_SLICING:
        return None
    name = candidate.profile.resource_name if strategy == MIG else "nvidia.com/gpu"
    return name if name in candidate.pool.dra_extended_resources else None


def decide(answers: Answers, policy: PolicySpec, inventory: Inventory) -> dict:
    """Return the placement decision as a JSON-ready dict (see docs/policy.md, "The decision")."""
    reasons = _Reasons()
    route = select_route(policy, answers)
    outcome = route.outcome if route else {}

    # 1. Strategy: the route's, or the platform default; then guardrails on top.
    if route:
        strategy = outcome["strategy"]
        reasons.add("strategy", f"{_capitalise(STRATEGY_WORDS[strategy])}: {route.rationale}", route)
    else:
        strategy = PLATFORM_DEFAULT_STRATEGY
        reasons.add(
            "strategy",
            "No policy rule covers this combination of answers, so you get a whole GPU: the platform default, "
            "not a decision anyone made for this kind of workload.",
        )
    fabric_isolation, fabric_rule = outcome.get("fabric_isolation", "shared"), route if "fabric_isolation" in outcome else None
    guardrails_applied = []
    for guardrail in policy.guardrails():
        if not guardrail.matches(answers):
            continue
        effect = guardrail.outcome
        if strategy in effect.get("forbid_strategies", ()):
            replacement = effect.get("replace_with", PLATFORM_DEFAULT_STRATEGY)
            reasons.add(
                "strategy",
                f"Not {STRATEGY_WORDS[strategy]}: {guardrail.rationale} You get a {STRATEGY_WORDS[replacement]} instead.",
                guardrail,
            )
            strategy = replacement
            guardrails_applied.append(guardrail.key)
        if effect.get("fabric_isolation") and effect["fabric_isolation"] != fabric_isolation:
            fabric_isolation, fabric_rule = effect["fabric_isolation"], guardrail
            guardrails_applied.append(guardrail.key)

    driver = driver_need(answers, route, [g for g in policy.guardrails() if g.matches(answers)])

    # 2. Placement: a pool that offers the strategy, holds the memory and could ever hold every replica at once,
    # smallest fit first.
    allowed_models = tuple(outcome.get("gpu_models", ()))
    needs_gang = answers.workload_class == "training" and answers.replicas > 1
    forbidden = {s for g in policy.guardrails() if g.matches(answers) for s in g.outcome.get("forbid_strategies", ())}
    fallback_from, why = None, ""
    if strategy in ONE_DEVICE_PER_REPLICA and answers.gpus_per_replica > 1:
        stated = outcome.get("fallback_strategy") if route else None
        if stated is None or stated in forbidden or stated in ONE_DEVICE_PER_REPLICA:
            raise PlacementImpossible(
                f"A replica can use only one {STRATEGY_WORDS[strategy]}: {ONE_DEVICE_PER_REPLICA[strategy]}. Ask "
                "for 1 GPU per replica (and more replicas, or more memory), or for a workload class the policy "
                "gives whole GPUs.",
                field="gpus_per_replica",
            )
        fallback_from, strategy = strategy, stated
        why = (f"a replica that needs {answers.gpus_per_replica} devices cannot use {STRATEGY_WORDS[fallback_from]}s: "
               f"{ONE_DEVICE_PER_REPLICA[fallback_from]}")
    candidates, skipped = _candidates(strategy, answers, inventory, allowed_models, driver)
    if not candidates and strategy != WHOLE_GPU and not fallback_from:
        fallback = outcome.get("fallback_strategy", PLATFORM_DEFAULT_STRATEGY) if route else PLATFORM_DEFAULT_STRATEGY
        if fallback not in forbidden:
            fallback_from, strategy = strategy, fallback
            candidates, skipped_fallback = _candidates(strategy, answers, inventory, allowed_models, driver)
            skipped += skipped_fallback
    if not candidates and skipped:
        raise PlacementImpossible(_too_small_message(skipped), field=_field_to_change(skipped))
    if not candidates:
        raise PlacementImpossible(_no_pool_message(strategy, answers, inventory, driver), field="gpu_memory_gb")
    if fallback_from:
        per_device = answers.gpu_memory_gb / answers.gpus_per_replica
        why = why or (
            f"no pool offers a MIG profile that holds {_gb(per_device)}"
            if fallback_from == MIG
            else f"no pool offers a {STRATEGY_WORDS[fallback_from]} for this request"
        )
        text = f"You get a {STRATEGY_WORDS[strategy]} because {why}."
        if route and "fallback_strategy" in outcome:
            reasons.add("strategy", text + " The rule says so for this case.", route)
        else:
            reasons.add("strategy", text + " This fallback is the platform default.")

    if needs_gang:
        gang_capable = [c for c in candidates if c.cluster.has_gang_scheduler]
        refused = [c for c in gang_capable if c.cluster.gang_refusal()]
        gang_capable = [c for c in gang_capable if not c.cluster.gang_refusal()]
        if not gang_capable and refused:
            raise PlacementImpossible(
                f"{answers.replicas} training replicas must start all-or-nothing, but the cluster that could host "
                f"them cannot gang-schedule as declared: {refused[0].cluster.gang_refusal()} (cluster field "
                "feature_gates). Ask for one replica, or ask the platform team to enable the gate.",
                field="replicas",
            )
        if not gang_capable:
            names = sorted({c.cluster.name for c in candidates})
            raise PlacementImpossible(
                f"{answers.replicas} training replicas must start all-or-nothing, but "
                f"{'the clusters' if len(names) > 1 else 'the cluster'} that could host them ({', '.join(names)}) "
                f"{'have' if len(names) > 1 else 'has'} no gang scheduler: three of four pods could run and burn "
                "GPU-hours while the last one waits. Ask for one replica, or ask the platform team for gang "
                "scheduling on that cluster.",
                field="replicas",
            )
        candidates = gang_capable
    chosen = min(candidates, key=_rank)
    cluster, pool = chosen.cluster, chosen.pool
    model = inventory.catalogue.model(pool.gpu_model)
    per_device = answers.gpu_memory_gb / answers.gpus_per_replica

    if allowed_models:
        reasons.add("gpu_model", f"{model.key}: the rule allows {', '.join(allowed_models)}.", route)
    if strategy == MIG:
        reasons.add(
            "mig_profile",
            f"{chosen.profile.name} is the smallest MIG profile offered that holds {_gb(per_device)} "
            f"({chosen.profile.compute_slices} of {model.mig.total_slices} compute slices of an {model.key}).",
            route if route and route.outcome.get("strategy") == MIG and not fallback_from else None,
        )
    elif strategy == MPS:
        reasons.add(
            "gpu_model",
            f"{model.key} is the smallest GPU in an MPS pool whose per-client memory limit "
            f"({_gb(round(chosen.gpu_memory_gb, 1))}: {model.memory_gb} GB / {pool.time_slicing_replicas} clients) "
            f"holds {_gb(per_device)}.",
            source="default",
        )
    else:
        reasons.add(
            "gpu_model",
            f"{model.key} ({model.memory_gb} GB) is the smallest GPU in a "
            f"{STRATEGY_ADJECTIVES[strategy]} pool that holds {_gb(per_device)}.",
            source="default",
        )
    reasons.add(
        "node_pool",
        f"Pool {cluster.name}/{pool.name} is the first that fits, by GPU size and then by name"
        + (" among clusters with a gang scheduler." if needs_gang else ".")
        + (" Skipped because they can never hold it: " + "; ".join(f"{s.pool} ({s.why})" for s in skipped) + "."
           if skipped else ""),
    )
    scheduling_model = pool.scheduling_model or cluster.scheduling_model
    extended = _dra_extended_resource(strategy, chosen, answers) if scheduling_model == "dra" else None
    how = "the device plugin (a device count)"
    if scheduling_model == "dra":
        how = (f"{extended} limits served from DRA devices (a DeviceClass declares it: DRAExtendedResource)"
               if extended else "Dynamic Resource Allocation claims")
    reasons.add(
        "scheduling_model",
        f"GPUs are requested through {how} because that is how {cluster.name}/{pool.name} is set up, not a choice "
        "made for this request.",
    )

    # 3. Isolation.
    memory_isolation = MEMORY_ISOLATION[strategy]
    if fabric_rule:
        reasons.add(
            "fabric_isolation",
            "Your pods get NVLink domains of their own: no other tenant's pods are placed on the same fabric. "
            + fabric_rule.rationale,
            fabric_rule,
        )
    else:
        reasons.add(
            "fabric_isolation",
            "Your pods may share an NVLink domain with other tenants' pods; no rule asked for fabric isolation.",
        )

    # 4. Gang.
    gang = None
    if needs_gang:
        gang = {"min_members": answers.replicas, "backend": cluster.gang_scheduler}
        text = (
            f"All {answers.replicas} replicas start together or none does, through {cluster.gang_scheduler} "
            f"on {cluster.name}."
        )
        if route and outcome.get("gang"):
            reasons.add("gang", text, route)
        else:
            reasons.add("gang", text + " Multi-pod training is always gang-scheduled (platform default).")
    multi_node = multi_node_decision(cluster, pool, inventory, needs_gang=needs_gang,
                                     fabric_isolation=fabric_isolation, reasons=reasons)

    # 5. Driver: the strictest floor of the answer and the rules, and a branch a rule pins the class to.
    driver_decided = None
    if driver.min_major:
        driver_decided = {"min_major": driver.min_major, "branch": driver.branch}
        runs = f"this pool runs {pool.driver_major or 'an unknown driver'}"
        if driver.branch:
            reasons.add("driver", f"Only nodes on the NVIDIA {driver.branch} driver branch ({runs}): "
                                  f"{driver.branch_from.rationale}", driver.branch_from)
        if driver.floor_from is not None:
            stricter = f" (stricter than the {driver.answered} you asked for)" if driver.answered else ""
            reasons.add("driver", f"Only nodes with NVIDIA driver {driver.min_major} or newer ({runs}): rule "
                                  f"{driver.floor_from.key} sets this floor for this kind of workload{stricter}. "
                                  f"{driver.floor_from.rationale}", driver.floor_from)
        elif driver.answered:
            reasons.add("driver", f"Only nodes with NVIDIA driver {driver.min_major} or newer ({runs}); you asked "
                                  "for this floor.", source="answer")

    # 6. Size answers the engineer left at their defaults are inherited, and said so.
    for key, words in (("gpus_per_replica", "GPUs per replica"), ("replicas", "Replicas"),
                       ("data_sensitivity", "Data sensitivity")):
        if key in answers.defaulted:
            reasons.add(key, f"{words} = {answers.get(key)}: you did not say, so the questionnaire default applies.")

    lease = lease_decision(answers, route, [g for g in policy.guardrails() if g.matches(answers)], reasons)

    equivalents_per_replica = _equivalents(strategy, chosen, inventory, answers.gpus_per_replica)
    approval = auto_approval(route, strategy=strategy, fallback_from=fallback_from,
                             gpu_equivalents=equivalents_per_replica * answers.replicas)
    reasons.add("approval", approval.text, route if approval.rule_spoke else None)

    decision = {
        "strategy": strategy,
        "gpu_model": model.key,
        "gpu_product": model.product,
        "mig_profile": chosen.profile.name if chosen.profile else None,
        "gpus_per_replica": answers.gpus_per_replica,
        "replicas": answers.replicas,
        "memory_isolation": memory_isolation,
        # MPS caps each client's device memory; no other strategy has a per-client limit.
        "memory_limit_gb": round(chosen.gpu_memory_gb, 1) if strategy == MPS else None,
        "fabric_isolation": fabric_isolation,
        "gang": gang,
        "multi_node": multi_node,
        "driver": driver_decided,
        "lease": lease,
        "cluster": cluster.name,
        "node_pool": pool.name,
        "scheduling_model": scheduling_model,
        "dra_extended_resource": extended,
        "policy_version": policy.version,
        "rule": route.key if route else None,
        "guardrails": sorted(set(guardrails_applied)),
        "auto_approve": approval.granted,
        "review_reasons": list(approval.review_codes),
        "auto_approve_limits": approval.limits,
        "gpu_equivalents_per_replica": float(round(equivalents_per_replica, 6)),
        "gpu_equivalents": float(round(equivalents_per_replica * answers.replicas, 6)),
        "reasons": reasons.items,
    }
    decision["summary"] = summarise(decision, answers)
    return decision


def _hours_words(hours: float) -> str:
    if hours % 24 == 0:
        return plural(int(hours // 24), "day")
    return plural(int(hours), "hour") if float(hours).is_integer() else f"{hours:g} hours"


def lease_decision(answers: Answers, route: RuleSpec | None, guardrails: list[RuleSpec], reasons: _Reasons) -> dict | None:
    """How long the grant lasts: the engineer's `lease_hours` within the policy's maximum, else the policy's
    default for the class (a guardrail's wins over the route's). No rule and no answer: no lease."""
    ruling = next((g for g in reversed(guardrails) if "lease" in g.outcome), None)
    if ruling is None and route and "lease" in route.outcome:
        ruling = route
    terms = ruling.outcome["lease"] if ruling else {}
    maximum = terms.get("max_hours")
    if answers.lease_hours is not None:
        hours = float(answers.lease_hours)
        if maximum is not None and hours > maximum:
            raise PlacementImpossible(
                f"A lease of {_hours_words(hours)} is longer than the {_hours_words(maximum)} rule {ruling.key} "
                f"allows for {answers.workload_class} work. Ask for {_hours_words(maximum)} or less; you can "
                "extend it later.", field="lease_hours")
        cap = f" (rule {ruling.key} allows at most {_hours_words(maximum)})" if maximum is not None else ""
        reasons.add("lease", f"The grant lasts {_hours_words(hours)} from approval, then it is taken down: you "
                             f"asked for this{cap}.", source="answer")
    elif ruling:
        hours = float(terms["default_hours"])
        reasons.add("lease", f"The grant lasts {_hours_words(hours)} from approval, then it is taken down unless you "
                             f"extend it: {ruling.rationale}", ruling)
    else:
        return None
    return {"hours": hours, "max_hours": float(maximum) if maximum is not None else None,
            "rule": ruling.key if ruling else None}


@dataclass(frozen=True)
class AutoApproval:
    """Whether the rule's automatic approval holds for what was actually decided. `review_codes` say, as stable
    codes, what sent the request to the platform team instead; `limits` are the rule's caps that need the team's
    state (checked when the request is submitted)."""

    granted: bool
    text: str
    rule_spoke: bool
    review_codes: tuple[str, ...] = ()
    limits: dict = field(default_factory=dict)


REVIEW = "The platform team reviews this request."


def _number(value) -> str:
    return f"{float(value):.3f}".rstrip("0").rstrip(".")


def auto_approval(route: RuleSpec | None, *, strategy: str, fallback_from: str | None,
                  gpu_equivalents: Fraction) -> AutoApproval:
    """A rule approves automatically only what it decided itself: never after a strategy fallback or a guardrail
    replaced its strategy, never above the per-request cap it states."""
    if not (route and route.outcome.get("auto_approve")):
        return AutoApproval(granted=False, text=REVIEW, rule_spoke=False)
    limits = dict(route.outcome.get("auto_approve_limits") or {})
    ruled = route.outcome["strategy"]
    if fallback_from or strategy != ruled:
        code = "StrategyFallback" if fallback_from else "GuardrailReplacedStrategy"
        cause = "a fallback" if fallback_from else "a guardrail"
        return AutoApproval(
            granted=False, rule_spoke=True, review_codes=(code,), limits=limits,
            text=f"Not approved automatically: rule {route.key} approves a {STRATEGY_WORDS[ruled]} without review, "
                 f"but {cause} gave you a {STRATEGY_WORDS[strategy]}. {REVIEW}",
        )
    cap = limits.get("per_request")
    if cap is not None and gpu_equivalents > Fraction(str(cap)):
        return AutoApproval(
            granted=False, rule_spoke=True, review_codes=("OverAutoApprovalRequestCap",), limits=limits,
            text=f"Not approved automatically: {_number(gpu_equivalents)} GPU equivalents is more than the "
                 f"{_number(cap)} rule {route.key} approves without review. {REVIEW}",
        )
    return AutoApproval(granted=True, rule_spoke=True, limits=limits,
                        text="Approved automatically: " + route.rationale)


def _too_small_message(skipped: list[_Skipped]) -> str:
    pools = "; ".join(f"{s.pool}: {s.why}" for s in skipped)
    change = "fewer replicas" if _field_to_change(skipped) == "replicas" else "fewer GPUs per replica"
    return (f"No pool can ever hold this request, even with nothing else running ({pools}). Ask for {change}, or "
            "ask the platform team for a bigger pool.")


def _field_to_change(skipped: list[_Skipped]) -> str:
    return "replicas" if any(s.field == "replicas" for s in skipped) else "gpus_per_replica"


def _no_pool_message(strategy: str, answers: Answers, inventory: Inventory, driver: DriverNeed) -> str:
    per_device = answers.gpu_memory_gb / answers.gpus_per_replica
    largest = max((inventory.catalogue.model(p.gpu_model).memory_gb for _, p in inventory.pools()
                   if p.gpu_model in inventory.catalogue.models), default=0)
    if not any(True for _ in inventory.pools()):
        return "No cluster has GPU pools yet; ask the platform team to declare one."
    if per_device > largest:
        return (
            f"{_gb(per_device)} per GPU is more than the largest GPU here ({largest} GB). Use more GPUs per "
            "replica (memory is split across them) or less memory."
        )
    floor = f" with {driver.words()}" if driver.min_major else ""
    return (
        f"No pool offers a {STRATEGY_WORDS[strategy]}{floor} with {_gb(per_device)} per GPU and "
        f"{plural(answers.gpus_per_replica, 'GPU')} on one node."
    )


AWAITING_APPROVAL = "after the platform team approves it"


def summarise(decision: dict, answers: Answers | None = None, *, approval: str | None = None,
              marked_below: bool = False) -> str:
    """The decision in plain words, as the engineer reads it.

    The stored summary is written at submission, so it says how approval will go; a page showing a request later
    passes `approval` (what did happen), and `marked_below` only where the defaulted reasons are marked below it.
    """
    model = decision["gpu_model"]
    per = decision["gpus_per_replica"]
    if decision["strategy"] == MIG:
        what = f"a hardware-isolated {decision['mig_profile']} slice of an {model}"
        if per > 1:
            what = f"{per} hardware-isolated {decision['mig_profile']} slices of {model} GPUs"
        memory = "your memory is isolated from other tenants"
    elif decision["strategy"] == TIME_SLICING:
        what = f"a time-sliced share of an {model}" if per == 1 else f"{per} time-sliced shares of {model} GPUs"
        memory = "memory is not isolated: other tenants on the same GPU can use it up and cause out-of-memory errors"
    elif decision["strategy"] == MPS:
        what = f"an MPS share of an {model}" if per == 1 else f"{per} MPS shares of {model} GPUs"
        limit = decision.get("memory_limit_gb")
        memory = (f"memory is capped at {_gb(limit)} per client by MPS" if limit else "memory is capped per client by MPS") + (
            ", compute is shared with other tenants and a crash of one client can stop the others")
    else:
        what = f"a whole {model}" if per == 1 else f"{per} whole {model} GPUs"
        memory = "the GPU is yours alone"
    parts = [what + (" per replica" if decision["replicas"] > 1 else ""), memory]
    if decision["replicas"] > 1:
        parts.append(f"{decision['replicas']} replicas")
    if decision["gang"]:
        backend = decision["gang"]["backend"]
        parts.append(f"all {decision['gang']['min_members']} start together or not at all "
                     f"({GANG_BACKEND_WORDS.get(backend, backend)})")
    if decision["fabric_isolation"] == "tenant_exclusive":
        parts.append("no other tenant shares your NVLink domain")
    if decision["driver"] and decision["driver"].get("branch"):
        parts.append(f"only on nodes on the driver {decision['driver']['branch']} branch")
    elif decision["driver"]:
        parts.append(f"only on nodes with driver {decision['driver']['min_major']} or newer")
    parts.append(f"on {decision['cluster']}/{decision['node_pool']}")
    if approval is None:
        approval = "approved automatically" if decision["auto_approve"] else AWAITING_APPROVAL
    parts.append(approval)
    defaults = sum(1 for r in decision["reasons"] if r["source"] == "default")
    if defaults:
        parts.append(f"{plural(defaults, 'choice')} came from defaults, not decisions"
                     + (" (marked below)" if marked_below else ""))
    return _capitalise("; ".join(parts)) + "."

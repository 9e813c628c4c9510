"""`decide()`: the placement decision as six steps, each adding its reasons. The answers and the policy give the
rules (strategy, fabric isolation, driver); the inventory gives the pool; the pool gives how the GPUs are
requested; then isolation, the gang, and the grant's terms with the decision written out and summarised."""
from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from gpu import gangapi
from gpu.catalogue import GpuModelSpec
from gpu.vocabulary import (DRA, KAI, MEMORY_ISOLATION, MIG, MPS, REPLICATED, STRATEGY_ADJECTIVES,
                            STRATEGY_WORDS, TIME_SLICING, TRAINING, WHOLE_GPU)

from .multinode import multi_node_decision
from ..words import GANG_BACKEND_WORDS
from .decision import ApprovalLimits, Decision, DriverTerms, Gang, Lease, MultiNode, Priority
from .inputs import Answers, Inventory, PolicySpec, RuleSpec
from .placement import (Candidate, Skipped, candidates_or_fallback, dra_extended_resource, equivalents,
                        gang_capable, one_device_fallback, smallest)
from .priority import priority_decision
from .reasons import Reasons, capitalise, gb
from .rules import PLATFORM_DEFAULT_STRATEGY, DriverNeed, driver_need, select_route
from .summary import summarise
from .terms import AutoApproval, auto_approval, lease_decision


@dataclass(frozen=True)
class Ruling:
    """What the rules say for these answers, before any pool is looked at."""

    route: RuleSpec | None
    guardrails: list[RuleSpec]  # the matching ones, in order
    strategy: str
    fabric_isolation: str
    fabric_rule: RuleSpec | None
    guardrails_applied: list[str]
    driver: DriverNeed

    @property
    def outcome(self) -> dict:
        return self.route.outcome if self.route else {}

    @property
    def forbidden(self) -> set[str]:
        return {s for g in self.guardrails for s in g.outcome.get("forbid_strategies", ())}


@dataclass(frozen=True)
class Placement:
    """The pool chosen, with the strategy it serves (and the one it replaced, if it is a fallback)."""

    chosen: Candidate
    model: GpuModelSpec
    strategy: str
    fallback_from: str | None
    needs_gang: bool

    @property
    def cluster(self):
        return self.chosen.cluster

    @property
    def pool(self):
        return self.chosen.pool


@dataclass(frozen=True)
class Terms:
    """What the grant comes with."""

    driver: DriverTerms | None
    lease: Lease | None
    priority: Priority | None
    approval: AutoApproval
    equivalents_per_replica: Fraction


def decide(answers: Answers, policy: PolicySpec, inventory: Inventory) -> Decision:
    """The placement decision (see docs/policy.md, "The decision"); `Decision.to_json()` is how it is stored."""
    reasons = Reasons()
    ruling = rule_answers(answers, policy, reasons)
    placement = place(answers, ruling, inventory, reasons)
    scheduling_model, extended = request_model(answers, placement, reasons)
    memory_isolation = isolate(ruling, placement, scheduling_model, reasons)
    gang, multi_node = gang_up(answers, ruling, placement, inventory, reasons)
    terms = grant_terms(answers, ruling, placement, inventory, reasons)
    chosen, route = placement.chosen, ruling.route
    decision = Decision(
        strategy=placement.strategy,
        gpu_model=placement.model.key,
        gpu_product=placement.model.product,
        mig_profile=chosen.profile.name if chosen.profile else None,
        gpus_per_replica=answers.gpus_per_replica,
        replicas=answers.replicas,
        memory_isolation=memory_isolation,
        # MPS caps each client's device memory on the device plugin; a DRA claim holds its GPU alone, uncapped.
        memory_limit_gb=(round(chosen.gpu_memory_gb, 1) if placement.strategy == MPS and scheduling_model != DRA
                         else None),
        fabric_isolation=ruling.fabric_isolation,
        gang=gang,
        multi_node=multi_node,
        driver=terms.driver,
        lease=terms.lease,
        priority=terms.priority,
        cluster=placement.cluster.name,
        node_pool=placement.pool.name,
        scheduling_model=scheduling_model,
        dra_extended_resource=extended,
        policy_version=policy.version,
        rule=route.key if route else None,
        guardrails=tuple(sorted(set(ruling.guardrails_applied))),
        auto_approve=terms.approval.granted,
        review_reasons=tuple(terms.approval.review_codes),
        auto_approve_limits=ApprovalLimits.from_json(terms.approval.limits),
        gpu_equivalents_per_replica=float(round(terms.equivalents_per_replica, 6)),
        gpu_equivalents=float(round(terms.equivalents_per_replica * answers.replicas, 6)),
        reasons=tuple(reasons.items),
    )
    return replace(decision, summary=summarise(decision, answers))


def rule_answers(answers: Answers, policy: PolicySpec, reasons: Reasons) -> Ruling:
    """Step 1: the winning route's strategy (or the platform default), guardrails on top, and the driver asked for."""
    route = select_route(policy, answers)
    outcome = route.outcome if route else {}
    if route:
        strategy = outcome["strategy"]
        reasons.add("strategy", f"{capitalise(STRATEGY_WORDS[strategy])}: {route.rationale}", route)
    else:
        strategy = PLATFORM_DEFAULT_STRATEGY
        reasons.add(
            "strategy",
            "No policy rule covers this combination of answers, so you get a whole GPU: the platform default, "
            "not a decision anyone made for this kind of workload.",
        )
    fabric_isolation, fabric_rule = outcome.get("fabric_isolation", "shared"), route if "fabric_isolation" in outcome else None
    guardrails = [g for g in policy.guardrails() if g.matches(answers)]
    applied = []
    for guardrail in guardrails:
        effect = guardrail.outcome
        if strategy in effect.get("forbid_strategies", ()):
            replacement = effect.get("replace_with", PLATFORM_DEFAULT_STRATEGY)
            reasons.add(
                "strategy",
                f"Not {STRATEGY_WORDS[strategy]}: {guardrail.rationale} You get a {STRATEGY_WORDS[replacement]} instead.",
                guardrail,
            )
            strategy = replacement
            applied.append(guardrail.key)
        if effect.get("fabric_isolation") and effect["fabric_isolation"] != fabric_isolation:
            fabric_isolation, fabric_rule = effect["fabric_isolation"], guardrail
            applied.append(guardrail.key)
    return Ruling(route=route, guardrails=guardrails, strategy=strategy, fabric_isolation=fabric_isolation,
                  fabric_rule=fabric_rule, guardrails_applied=applied,
                  driver=driver_need(answers, route, guardrails))


def place(answers: Answers, ruling: Ruling, inventory: Inventory, reasons: Reasons) -> Placement:
    """Step 2: the smallest pool that offers the strategy (or its fallback) and could ever hold every replica."""
    allowed_models = tuple(ruling.outcome.get("gpu_models", ()))
    needs_gang = answers.workload_class == TRAINING and answers.replicas > 1
    strategy, fallback_from, why = one_device_fallback(ruling.strategy, answers, ruling.outcome, ruling.forbidden)
    strategy, fallback_from, found, skipped = candidates_or_fallback(
        strategy, fallback_from, answers, inventory, outcome=ruling.outcome, forbidden=ruling.forbidden,
        allowed_models=allowed_models, driver=ruling.driver)
    if fallback_from:
        _fallback_reason(answers, ruling, strategy, fallback_from, why, reasons)
    if needs_gang:
        found = gang_capable(answers, found)
    chosen = smallest(found)
    placement = Placement(chosen=chosen, model=inventory.catalogue.model(chosen.pool.gpu_model), strategy=strategy,
                          fallback_from=fallback_from, needs_gang=needs_gang)
    _placement_reasons(answers, ruling, placement, allowed_models, skipped, reasons)
    return placement


def _fallback_reason(answers: Answers, ruling: Ruling, strategy: str, fallback_from: str, why: str,
                     reasons: Reasons) -> None:
    why = why or (
        f"no pool offers a MIG profile that holds {gb(answers.memory_per_device)}"
        if fallback_from == MIG
        else f"no pool offers a {STRATEGY_WORDS[fallback_from]} for this request"
    )
    text = f"You get a {STRATEGY_WORDS[strategy]} because {why}."
    if ruling.route and "fallback_strategy" in ruling.outcome:
        reasons.add("strategy", text + " The rule says so for this case.", ruling.route)
    else:
        reasons.add("strategy", text + " This fallback is the platform default.")


def _placement_reasons(answers: Answers, ruling: Ruling, placement: Placement, allowed_models: tuple,
                       skipped: list[Skipped], reasons: Reasons) -> None:
    route, model, chosen, strategy = ruling.route, placement.model, placement.chosen, placement.strategy
    per_device = answers.memory_per_device
    if allowed_models:
        reasons.add("gpu_model", f"{model.key}: the rule allows {', '.join(allowed_models)}.", route)
    if strategy == MIG:
        reasons.add(
            "mig_profile",
            f"{chosen.profile.name} is the smallest MIG profile offered that holds {gb(per_device)} "
            f"({chosen.profile.compute_slices} of {model.mig.total_slices} compute slices of an {model.key}).",
            route if route and route.outcome.get("strategy") == MIG and not placement.fallback_from else None,
        )
        reasons.add("mig_readiness", mig_readiness_words(placement.pool), source="cluster")
    elif strategy == MPS:
        reasons.add(
            "gpu_model",
            f"{model.key} is the smallest GPU in an MPS pool whose per-client memory limit "
            f"({gb(round(chosen.gpu_memory_gb, 1))}: {model.memory_gb} GB / {placement.pool.time_slicing_replicas} "
            f"clients) holds {gb(per_device)}.",
            source="default",
        )
    else:
        reasons.add(
            "gpu_model",
            f"{model.key} ({model.memory_gb} GB) is the smallest GPU in a "
            f"{STRATEGY_ADJECTIVES[strategy]} pool that holds {gb(per_device)}.",
            source="default",
        )
    reasons.add(
        "node_pool",
        f"Pool {placement.cluster.name}/{placement.pool.name} is the first that fits, by GPU size and then by name"
        + (" among clusters with a gang scheduler." if placement.needs_gang else ".")
        + (" Skipped because they can never hold it: " + "; ".join(f"{s.pool} ({s.why})" for s in skipped) + "."
           if skipped else ""),
    )


def mig_readiness_words(pool) -> str:
    """Whether MIG pods wait for mig-manager's readiness label on this pool, and why (manifests/affinity.py)."""
    label = "nvidia.com/mig.config.state=success"
    if pool.scheduling_model == DRA:
        return (f"Pods do not wait for {label}: the DRA driver lists only the MIG devices that exist, and DRA nodes "
                "need not run mig-manager.")
    if pool.mig_ready_label is True:
        return (f"Pods land only on nodes labelled {label}: mig-manager configures {pool.name}'s MIG layout, and "
                "writes that label once a layout change is done.")
    if pool.mig_ready_label is False:
        return (f"Pods do not wait for {label}: {pool.name}'s MIG layout is not managed by mig-manager (declared so, "
                "or its nodes carry no nvidia.com/mig.config.state), and only mig-manager writes that label.")
    return (f"Pods do not wait for {label}: whether mig-manager configures {pool.name} is not known (never synced, "
            "not declared), and a label only mig-manager writes would keep them off nodes configured otherwise.")


def request_model(answers: Answers, placement: Placement, reasons: Reasons) -> tuple[str, str | None]:
    """Step 3: how the GPUs are requested (the pool's scheduling model), and a DRA extended resource if served."""
    cluster, pool = placement.cluster, placement.pool
    scheduling_model = pool.scheduling_model or cluster.scheduling_model
    extended = (dra_extended_resource(placement.strategy, placement.chosen, answers)
                if scheduling_model == DRA else None)
    how = "the device plugin (a device count)"
    if scheduling_model == DRA:
        how = (f"{extended} limits served from DRA devices (a DeviceClass declares it: DRAExtendedResource)"
               if extended else "Dynamic Resource Allocation claims")
    text = (f"GPUs are requested through {how} because that is how {cluster.name}/{pool.name} is set up, not a "
            "choice made for this request.")
    if scheduling_model == DRA and not extended and pool.dra_extended_resources and (
            kept := _claim_kept(placement, answers)):
        text += " " + kept
    if scheduling_model == DRA and placement.strategy in REPLICATED:
        text += " " + dra_share_words(placement.strategy, placement.model.key)
    if scheduling_model == DRA and placement.strategy == MIG and cluster.gang_scheduler == KAI:
        text += " " + gangapi.KAI_DRA_MIG_GAP
    reasons.add("scheduling_model", text)
    return scheduling_model, extended


def _claim_kept(placement: Placement, answers: Answers) -> str:
    """Why a DRA request keeps its claim although a DeviceClass of the pool serves an extended resource."""
    if answers.min_driver_major:
        return "It keeps a claim: the driver floor is a CEL selector on the claim, and an extended resource has none."
    if placement.strategy in REPLICATED:
        return ("It keeps a claim: the driver's sharing settings live in the claim, and the claim the scheduler makes "
                "for an extended resource carries none.")
    refusal = gangapi.dra_extended_resource_refusal(placement.cluster.gang_scheduler)
    return f"It keeps a claim: {refusal}." if refusal else ""


def dra_share_words(strategy: str, model: str) -> str:
    """What a time-sliced or MPS request really gets on DRA: a whole GPU (manifests/devices.py)."""
    how = ("its own processes are time-sliced on it" if strategy == TIME_SLICING
           else "an MPS server shares it between its own processes, with no per-client cap")
    return (f"On DRA a {STRATEGY_WORDS[strategy]} is a whole {model}: each pod's claim holds its GPU alone (the "
            f"NVIDIA DRA driver v0.4.1 cannot give one GPU to two claims), {how}, and it is priced, counted against "
            "quota and billed as one GPU.")


def isolate(ruling: Ruling, placement: Placement, scheduling_model: str, reasons: Reasons) -> str:
    """Step 4: memory isolation from the strategy (a DRA claim holds its GPU alone, whatever the strategy); fabric
    isolation from the rules, said either way."""
    if ruling.fabric_rule:
        reasons.add(
            "fabric_isolation",
            "Your pods get NVLink domains of their own: no other tenant's pods are placed on the same fabric. "
            + ruling.fabric_rule.rationale,
            ruling.fabric_rule,
        )
    else:
        reasons.add(
            "fabric_isolation",
            "Your pods may share an NVLink domain with other tenants' pods; no rule asked for fabric isolation.",
        )
    if scheduling_model == DRA and placement.strategy in REPLICATED:
        return MEMORY_ISOLATION[WHOLE_GPU]
    return MEMORY_ISOLATION[placement.strategy]


def gang_up(answers: Answers, ruling: Ruling, placement: Placement, inventory: Inventory,
            reasons: Reasons) -> tuple[Gang | None, MultiNode | None]:
    """Step 5: multi-pod training starts all-or-nothing; the multi-node part (restart, packing, ComputeDomain)."""
    gang = None
    cluster = placement.cluster
    if placement.needs_gang:
        gang = Gang(min_members=answers.replicas, backend=cluster.gang_scheduler)
        text = (
            f"All {answers.replicas} replicas start together or none does, through "
            f"{GANG_BACKEND_WORDS.get(cluster.gang_scheduler, cluster.gang_scheduler)} on {cluster.name}."
        )
        if ruling.route and ruling.outcome.get("gang"):
            reasons.add("gang", text, ruling.route)
        else:
            reasons.add("gang", text + " Multi-pod training is always gang-scheduled (platform default).")
    multi_node = multi_node_decision(cluster, placement.pool, inventory, needs_gang=placement.needs_gang,
                                     fabric_isolation=ruling.fabric_isolation, reasons=reasons)
    return gang, multi_node


def grant_terms(answers: Answers, ruling: Ruling, placement: Placement, inventory: Inventory,
                reasons: Reasons) -> Terms:
    """Step 6: the driver floor, the sizes left at their defaults, the lease, the priority (and preemption), and
    whether approval is automatic."""
    driver = _driver_terms(ruling.driver, placement, reasons)
    # Size answers the engineer left at their defaults are inherited, and said so.
    for key, words in (("gpus_per_replica", "GPUs per replica"), ("replicas", "Replicas"),
                       ("data_sensitivity", "Data sensitivity")):
        if key in answers.defaulted:
            reasons.add(key, f"{words} = {answers.get(key)}: you did not say, so the questionnaire default applies.")
    lease = lease_decision(answers, ruling.route, ruling.guardrails, reasons)
    priority = priority_decision(ruling.route, ruling.guardrails, placement.cluster.gang_scheduler, reasons)
    per_replica = equivalents(placement.strategy, placement.chosen, inventory, answers.gpus_per_replica)
    approval = auto_approval(ruling.route, strategy=placement.strategy, fallback_from=placement.fallback_from,
                             gpu_equivalents=per_replica * answers.replicas)
    reasons.add("approval", approval.text, ruling.route if approval.rule_spoke else None)
    return Terms(driver=driver, lease=lease, priority=priority, approval=approval,
                 equivalents_per_replica=per_replica)


def _driver_terms(driver: DriverNeed, placement: Placement, reasons: Reasons) -> DriverTerms | None:
    """The strictest floor of the answer and the rules, and a branch a rule pins the class to."""
    if not driver.min_major:
        return None
    runs = f"this pool runs {placement.pool.driver_major or 'an unknown driver'}"
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
    return DriverTerms(min_major=driver.min_major, branch=driver.branch)

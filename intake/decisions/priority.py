"""Priority and preemption of a grant: the tier its workload class gets from the policy, whether it may be
preempted (after how long) and the seconds it gets to checkpoint, in words the engineer reads.

A guardrail's `priority` wins over the route's, as with a lease. No rule: the request inherits the scheduler's
defaults (no PriorityClass, Kubernetes' 30 seconds after SIGTERM), said so and marked as a default.

A minimum runtime is held only where the cluster's scheduler can hold it for one workload (docs/policy.md,
"Priority and preemption"): Volcano's `cdp` plugin reads the pod's `volcano.sh/cooldown-time` (volcano v1.15.1
`pkg/scheduler/plugins/cdp/cdp.go`). KAI v0.17.0 holds one per queue only (`Queue.spec.preemptMinRuntime`,
`pkg/scheduler/plugins/minruntime/minruntime.go`), and a team's queue holds all its classes; Kueue v0.19.2 has
none (kubernetes-sigs/kueue#9596); neither has the default scheduler or the native Workload API (KEP-4671).
"""
from __future__ import annotations

from gpu.vocabulary import (KUBERNETES_DEFAULT_GRACE_SECONDS, PRIORITY_TIER_WORDS, PRIORITY_TIERS, PRODUCTION_INFERENCE,
                            VOLCANO)

from .decision import Priority
from .inputs import RuleSpec
from .reasons import Reasons, capitalise

# Gang schedulers that hold a minimum runtime for one workload (module doc).
MIN_RUNTIME_BACKENDS = frozenset({VOLCANO})
INHERITED = ("No policy rule sets a priority for this kind of workload: it runs at the cluster's default priority, "
             "any higher-priority pod may preempt it at any moment, and it gets Kubernetes' default 30 seconds "
             "between SIGTERM and SIGKILL to save its state.")


def priority_rule(route: RuleSpec | None, guardrails: list[RuleSpec]) -> RuleSpec | None:
    """The rule whose `priority` holds: the last matching guardrail that sets one, else the route's."""
    ruling = next((g for g in reversed(guardrails) if "priority" in g.outcome), None)
    if ruling is None and route and "priority" in route.outcome:
        ruling = route
    return ruling


def priority_terms(rule, gang_scheduler: str) -> Priority:
    """What a rule's `priority` gives on a cluster whose gang scheduler is `gang_scheduler` (a rule from the policy
    spec or the database: both have `key` and `outcome`)."""
    terms = rule.outcome["priority"]
    minimum = terms.get("min_runtime_minutes") if terms["preemptible"] else None
    return Priority(
        tier=terms["tier"], preemptible=terms["preemptible"], preempts=terms.get("preempts", True),
        grace_seconds=int(terms.get("grace_seconds", KUBERNETES_DEFAULT_GRACE_SECONDS)), min_runtime_minutes=minimum,
        min_runtime_enforced=bool(minimum) and gang_scheduler in MIN_RUNTIME_BACKENDS, rule=rule.key)


def priority_decision(route: RuleSpec | None, guardrails: list[RuleSpec], gang_scheduler: str,
                      reasons: Reasons) -> Priority | None:
    ruling = priority_rule(route, guardrails)
    if ruling is None:
        reasons.add("priority", INHERITED)
        return None
    terms = ruling.outcome["priority"]
    priority = priority_terms(ruling, gang_scheduler)
    reasons.add("priority", f"{capitalise(priority_words(priority))}: {ruling.rationale}", ruling)
    if "grace_seconds" not in terms:
        reasons.add("grace", f"Rule {ruling.key} sets no checkpoint grace, so you get Kubernetes' default 30 seconds "
                             "between SIGTERM and SIGKILL.")
    minimum = priority.min_runtime_minutes
    if minimum and not priority.min_runtime_enforced:
        reasons.add("min_runtime", f"The policy's minimum runtime of {duration_words(minimum * 60)} is not held "
                                   f"on this cluster: its scheduler ({gang_scheduler}) cannot hold one for a single "
                                   "workload, so preemption may come at any time.", source="cluster")
    return priority


def higher_tiers(tier: str) -> list[str]:
    return list(PRIORITY_TIERS[:PRIORITY_TIERS.index(tier)]) if tier in PRIORITY_TIERS else []


def priority_words(priority: Priority) -> str:
    """"may be stopped for production inference after at least 2 hours; you get 10 minutes to checkpoint"."""
    tier = PRIORITY_TIER_WORDS.get(priority.tier, priority.tier)
    grace = f"you get {duration_words(priority.grace_seconds)} to checkpoint after SIGTERM"
    if not priority.preemptible:
        words = f"{tier} priority, never stopped to make room for other work"
        if priority.tier != PRODUCTION_INFERENCE:
            words += " (higher tiers wait rather than preempt it where the scheduler allows)"
        return words + ("" if priority.preempts else "; it never preempts others")
    above = " or ".join(PRIORITY_TIER_WORDS[t] for t in higher_tiers(priority.tier)) or "higher-priority work"
    when = (f"after at least {duration_words(priority.min_runtime_minutes * 60)}"
            if priority.min_runtime_minutes and priority.min_runtime_enforced else "at any time")
    words = f"{tier} priority: may be stopped for {above} {when}; {grace}"
    return words + ("" if priority.preempts else "; it never preempts others")


def duration_words(seconds: int) -> str:
    if seconds and seconds % 3600 == 0:
        hours = seconds // 3600
        return f"{hours} hour" + ("s" if hours != 1 else "")
    if seconds and seconds % 60 == 0:
        minutes = seconds // 60
        return f"{minutes} minute" + ("s" if minutes != 1 else "")
    return f"{seconds} second" + ("s" if seconds != 1 else "")

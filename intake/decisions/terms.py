"""The terms a grant comes with: how long its lease lasts and whether the rule's automatic approval holds."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from gpu.vocabulary import STRATEGY_WORDS

from .decision import Lease
from .inputs import Answers, RuleSpec
from .reasons import PlacementImpossible, Reasons, hours_words, number

REVIEW = "The platform team reviews this request."


def lease_decision(answers: Answers, route: RuleSpec | None, guardrails: list[RuleSpec], reasons: Reasons) -> Lease | None:
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
                f"A lease of {hours_words(hours)} is longer than the {hours_words(maximum)} rule {ruling.key} "
                f"allows for {answers.workload_class} work. Ask for {hours_words(maximum)} or less; you can "
                "extend it later.", field="lease_hours")
        cap = f" (rule {ruling.key} allows at most {hours_words(maximum)})" if maximum is not None else ""
        reasons.add("lease", f"The grant lasts {hours_words(hours)} from approval, then it is taken down: you "
                             f"asked for this{cap}.", source="answer")
    elif ruling:
        hours = float(terms["default_hours"])
        reasons.add("lease", f"The grant lasts {hours_words(hours)} from approval, then it is taken down unless you "
                             f"extend it: {ruling.rationale}", ruling)
    else:
        return None
    return Lease(hours=hours, max_hours=float(maximum) if maximum is not None else None,
                 rule=ruling.key if ruling else None)


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
            text=f"Not approved automatically: {number(gpu_equivalents)} GPU equivalents is more than the "
                 f"{number(cap)} rule {route.key} approves without review. {REVIEW}",
        )
    return AutoApproval(granted=True, rule_spoke=True, limits=limits,
                        text="Approved automatically: " + route.rationale)

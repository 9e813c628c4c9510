"""Answers -> decision, stored nowhere: the decision under a policy version, and for a team the gate that holds a
rule's automatic approval against the team's quota and the rule's per-team cap."""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from portal.errors import InvalidInput
from portal.models import Team

from ..answers import AnswersInvalid, normalise_answers
from ..decision_cache import decision_inputs_reading
from ..decisions import REVIEW, STRATEGY_WORDS, Answers, Decision, PlacementImpossible, decide, summarise
from ..hooks import decision_gate_reads, decision_gated, inventory_snapshot, team_quota_state
from ..models import PolicyVersion
from ..questionnaire import NormalisedAnswers
from ..selectors import policy_current, policy_spec, team_held_under_rule


@dataclass(frozen=True)
class Evaluation:
    answers: NormalisedAnswers
    decision: Decision
    policy_version: PolicyVersion
    # What the decision gates read first for the team (intake.hooks.decision_gate_reads), read with the stamps.
    gate_reads: dict | None = None


class AnswersError(InvalidInput):
    """Several answers are wrong at once; the API shows each under `answers`."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()), path=("answers",))
        self.errors = errors

    def as_field_errors(self) -> dict:
        return {"answers": self.errors}


def request_evaluate(*, raw_answers, policy_version: PolicyVersion | None = None, inventory=None,
                     team: Team | None = None, gates_for: Team | None = None) -> Evaluation:
    """Answers -> decision under a policy version (the active one by default). Stores nothing.
    `raw_answers` may be already normalised (the API's serializer does that), keeping what was defaulted.
    With `team`, a rule's automatic approval is also held against the team's quota and the rule's per-team cap.
    With `gates_for`, what the decision gates read first for that team comes back as `gate_reads`, for a caller
    that runs the gates itself (the submission runs them under the team's lock)."""
    try:
        answers = raw_answers if isinstance(raw_answers, NormalisedAnswers) else normalise_answers(raw_answers)
    except AnswersInvalid as exc:
        raise AnswersError(exc.errors) from None
    read = None
    if policy_version is None and inventory is None:
        # The usual case (preview, submit): cached per process, checked per call; what the gates read first for
        # the team comes in the same query.
        gated_team = team or gates_for
        current, read = decision_inputs_reading(decision_gate_reads(team=gated_team) if gated_team else {})
        version, policy, inventory = current.policy_version, current.policy, current.inventory
    else:
        version = policy_version or policy_current()
        policy, inventory = policy_spec(version), inventory or inventory_snapshot()
    try:
        decision = decide(Answers.from_dict(answers.values, answers.defaulted), policy, inventory)
    except PlacementImpossible as exc:
        raise InvalidInput(exc.message, path=("answers", exc.field)) from None
    if team is not None:
        decision = auto_approval_team_gate(team=team, decision=decision)
        decision = decision_gated(team=team, decision=decision, answers=answers.values, read=read)
    return Evaluation(answers=answers, decision=decision, policy_version=version, gate_reads=read)


def _team_gate_refusal(*, team: Team, decision: Decision) -> tuple[str, str] | None:
    """(code, text) when the team's state keeps a rule's automatic approval from holding."""
    strategy, rule, limits = decision.strategy, decision.rule, decision.auto_approve_limits
    words = STRATEGY_WORDS[strategy]
    quota = team_quota_state(team=team, strategy=strategy, requested=decision.gpu_equivalents)
    if quota.limit is None and not limits.without_quota:
        return ("NoQuota", f"Not approved automatically: team {team.slug} has no {words} quota, and rule {rule} "
                           f"does not approve work of teams without one. {REVIEW}")
    cap = limits.per_team
    if cap is not None:
        held = team_held_under_rule(team=team, rule_key=rule)
        would_hold = held + Decimal(str(decision.gpu_equivalents))
        if would_hold > Decimal(str(cap)):
            return ("OverAutoApprovalTeamCap",
                    f"Not approved automatically: team {team.slug} would hold {_figure(would_hold)} GPU equivalents "
                    f"under rule {rule} ({_figure(held)} held), more than the {_figure(cap)} it approves without "
                    f"review at once. {REVIEW}")
    return None


def _figure(value) -> str:
    return f"{Decimal(str(value)):.3f}".rstrip("0").rstrip(".")


def auto_approval_team_gate(*, team: Team, decision: Decision) -> Decision:
    """The decision, with its automatic approval withdrawn (and the reason said) if the team has no quota on the
    strategy or would pass the rule's per-team cap. Reads the team's state; call it under the team's lock where
    the answer is acted on."""
    if not decision.auto_approve:
        return decision
    refusal = _team_gate_refusal(team=team, decision=decision)
    if refusal is None:
        return decision
    code, text = refusal
    gated = decision.held_for_review(code=code, text=text)
    return replace(gated, summary=summarise(gated, None))

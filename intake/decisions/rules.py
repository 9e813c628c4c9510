"""Reading the policy for one set of answers: the route that wins and the NVIDIA driver the rules ask for."""
from __future__ import annotations

from dataclasses import dataclass

from gpu.vocabulary import WHOLE_GPU

from .inputs import Answers, PolicySpec, RuleSpec
from .reasons import PlacementImpossible

PLATFORM_DEFAULT_STRATEGY = WHOLE_GPU


def select_route(policy: PolicySpec, answers: Answers) -> RuleSpec | None:
    """Most specific matching route wins; ties go to the lower position, then the key (deterministic)."""
    matching = [r for r in policy.routes() if r.matches(answers)]
    return min(matching, key=lambda r: (-r.specificity, r.position, r.key), default=None)


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

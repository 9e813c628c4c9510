"""Hooks through which apps above intake take part in its decisions and review page without intake importing
them (chargeback imports intake, so intake may not import chargeback). Filled in those apps' `AppConfig.ready()`.

- `DECISION_GATES`: `gate(team=, decision=, answers=) -> dict`, the decision (maybe with its automatic approval
  withdrawn and a stable code added to `review_reasons`); run, in order, whenever a decision is made for a team.
- `REVIEW_SECTIONS`: `section(gpu_request=) -> {"title", "html"} | None`, further sections of the review page.
"""
from __future__ import annotations

from typing import Callable

DECISION_GATES: list[Callable[..., dict]] = []
REVIEW_SECTIONS: list[Callable[..., dict | None]] = []


def register_decision_gate(gate: Callable[..., dict]) -> None:
    if gate not in DECISION_GATES:
        DECISION_GATES.append(gate)


def register_review_section(section: Callable[..., dict | None]) -> None:
    if section not in REVIEW_SECTIONS:
        REVIEW_SECTIONS.append(section)


def decision_gated(*, team, decision: dict, answers: dict) -> dict:
    for gate in DECISION_GATES:
        decision = gate(team=team, decision=decision, answers=answers)
    return decision

"""Routing-policy rules as data: what a rule may say, and its validation (used by the model, the admin and
the services)."""
from __future__ import annotations

from provisioning.vocabulary import STRATEGIES

from .questionnaire import MATCHABLE_KEYS, QUESTIONS_BY_KEY
ROUTE_OUTCOME_KEYS = {"strategy", "fallback_strategy", "gang", "auto_approve", "fabric_isolation", "gpu_models"}
GUARDRAIL_OUTCOME_KEYS = {"forbid_strategies", "replace_with", "fabric_isolation"}
FABRIC_VALUES = ("shared", "tenant_exclusive")


def rule_validation_errors(*, kind: str, match, outcome) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if not isinstance(match, dict):
        return {"match": ["Must be an object of answer -> list of values."]}
    if not isinstance(outcome, dict):
        return {"outcome": ["Must be an object."]}
    for key, values in match.items():
        if key not in MATCHABLE_KEYS:
            errors.setdefault("match", []).append(f"{key!r} is not an answer a rule can match; use {', '.join(MATCHABLE_KEYS)}.")
            continue
        allowed = {o.value for o in QUESTIONS_BY_KEY[key].options}
        if not isinstance(values, list) or not values or not set(values) <= allowed:
            errors.setdefault("match", []).append(f"{key} must be a non-empty list drawn from {sorted(allowed)}.")
    allowed_keys = ROUTE_OUTCOME_KEYS if kind == "route" else GUARDRAIL_OUTCOME_KEYS
    unknown = set(outcome) - allowed_keys
    if unknown:
        errors.setdefault("outcome", []).append(f"Unknown keys {sorted(unknown)}; a {kind} may use {sorted(allowed_keys)}.")
    if kind == "route":
        if outcome.get("strategy") not in STRATEGIES:
            errors.setdefault("outcome", []).append(f"A route needs a strategy, one of {list(STRATEGIES)}.")
        if "fallback_strategy" in outcome and outcome["fallback_strategy"] not in STRATEGIES:
            errors.setdefault("outcome", []).append(f"fallback_strategy must be one of {list(STRATEGIES)}.")
        for flag in ("gang", "auto_approve"):
            if flag in outcome and not isinstance(outcome[flag], bool):
                errors.setdefault("outcome", []).append(f"{flag} must be true or false.")
        if "gpu_models" in outcome and not (
            isinstance(outcome["gpu_models"], list) and all(isinstance(m, str) for m in outcome["gpu_models"])
        ):
            errors.setdefault("outcome", []).append("gpu_models must be a list of catalogue keys.")
    else:
        forbid = outcome.get("forbid_strategies", [])
        if not isinstance(forbid, list) or not set(forbid) <= set(STRATEGIES):
            errors.setdefault("outcome", []).append(f"forbid_strategies must be a list drawn from {list(STRATEGIES)}.")
        if "replace_with" in outcome and (outcome["replace_with"] not in STRATEGIES or outcome["replace_with"] in forbid):
            errors.setdefault("outcome", []).append("replace_with must be a strategy that is not forbidden.")
        if not forbid and "fabric_isolation" not in outcome:
            errors.setdefault("outcome", []).append("A guardrail forbids strategies or sets fabric_isolation.")
    if "fabric_isolation" in outcome and outcome["fabric_isolation"] not in FABRIC_VALUES:
        errors.setdefault("outcome", []).append(f"fabric_isolation must be one of {list(FABRIC_VALUES)}.")
    return errors

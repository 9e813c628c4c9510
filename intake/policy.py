"""Routing-policy rules as data: what a rule may say, and its validation (used by the model, the admin and
the services)."""
from __future__ import annotations

from gpu.vocabulary import PRIORITY_TIERS, STRATEGIES

from .questionnaire import MATCHABLE_KEYS, QUESTIONS_BY_KEY

ROUTE_OUTCOME_KEYS = {"strategy", "fallback_strategy", "gang", "auto_approve", "auto_approve_limits", "fabric_isolation",
                      "gpu_models", "driver", "lease", "priority"}
# What a rule that approves automatically may cap: GPU equivalents per request and held by a team at once under the
# rule, and whether a team with no quota on the strategy is approved without review (never, unless said).
AUTO_APPROVE_LIMIT_KEYS = {"per_request", "per_team", "without_quota"}
GUARDRAIL_OUTCOME_KEYS = {"forbid_strategies", "replace_with", "fabric_isolation", "driver", "lease", "priority"}
# A lease on the grant: how long it lasts unless the engineer asks otherwise, and the longest it may be (also the
# most time left an extension can reach), in hours.
LEASE_KEYS = {"default_hours", "max_hours"}
LEASE_MAX_HOURS = 8760
# Priority and preemption of a workload class (docs/policy.md, "Priority and preemption"): its tier, whether it may
# be preempted, whether it may preempt lower tiers, the minimum runtime before it may be preempted (minutes) and the
# seconds it gets to checkpoint after SIGTERM (terminationGracePeriodSeconds).
PRIORITY_KEYS = {"tier", "preemptible", "preempts", "min_runtime_minutes", "grace_seconds"}
PRIORITY_MAX_GRACE_SECONDS = 3600
PRIORITY_MAX_MIN_RUNTIME_MINUTES = 10080
# A driver requirement: a floor (major version) and/or the release branch the class is kept on, e.g. 580.
DRIVER_KEYS = {"min_major", "branch"}
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
        errors_limits = _auto_approve_limit_errors(outcome)
        if errors_limits:
            errors.setdefault("outcome", []).extend(errors_limits)
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
        if not forbid and not {"fabric_isolation", "driver", "lease", "priority"} & set(outcome):
            errors.setdefault("outcome", []).append(
                "A guardrail forbids strategies, sets fabric_isolation, a driver, a lease or a priority.")
    if "driver" in outcome:
        errors_driver = _driver_errors(outcome["driver"])
        if errors_driver:
            errors.setdefault("outcome", []).extend(errors_driver)
    if "lease" in outcome:
        errors_lease = _lease_errors(outcome["lease"])
        if errors_lease:
            errors.setdefault("outcome", []).extend(errors_lease)
    if "priority" in outcome:
        errors_priority = _priority_errors(outcome["priority"])
        if errors_priority:
            errors.setdefault("outcome", []).extend(errors_priority)
    if "fabric_isolation" in outcome and outcome["fabric_isolation"] not in FABRIC_VALUES:
        errors.setdefault("outcome", []).append(f"fabric_isolation must be one of {list(FABRIC_VALUES)}.")
    return errors


def _auto_approve_limit_errors(outcome: dict) -> list[str]:
    if "auto_approve_limits" not in outcome:
        return []
    limits = outcome["auto_approve_limits"]
    if not outcome.get("auto_approve"):
        return ["auto_approve_limits needs auto_approve: true."]
    if not isinstance(limits, dict):
        return ["auto_approve_limits must be an object with per_request, per_team and/or without_quota."]
    errors = []
    unknown = set(limits) - AUTO_APPROVE_LIMIT_KEYS
    if unknown:
        errors.append(f"auto_approve_limits: unknown keys {sorted(unknown)}; use {sorted(AUTO_APPROVE_LIMIT_KEYS)}.")
    for key in ("per_request", "per_team"):
        value = limits.get(key)
        if key in limits and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 10000):
            errors.append(f"auto_approve_limits.{key} must be a number of GPU equivalents above 0 (at most 10000).")
    if "without_quota" in limits and not isinstance(limits["without_quota"], bool):
        errors.append("auto_approve_limits.without_quota must be true or false.")
    return errors


def _driver_errors(driver) -> list[str]:
    if not isinstance(driver, dict) or not driver or set(driver) - DRIVER_KEYS:
        return ["driver must be an object with min_major and/or branch (NVIDIA driver major versions, e.g. 580)."]
    return [f"driver.{key} must be a driver major version between 400 and 999."
            for key, value in sorted(driver.items())
            if isinstance(value, bool) or not isinstance(value, int) or not 400 <= value <= 999]


def _lease_errors(lease) -> list[str]:
    if not isinstance(lease, dict) or "default_hours" not in lease or set(lease) - LEASE_KEYS:
        return ["lease must be an object with default_hours and optionally max_hours (hours, e.g. 168 for 7 days)."]
    errors = [f"lease.{key} must be a number of hours above 0 (at most {LEASE_MAX_HOURS})."
              for key, value in sorted(lease.items())
              if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= LEASE_MAX_HOURS]
    if not errors and lease.get("max_hours", lease["default_hours"]) < lease["default_hours"]:
        errors.append("lease.max_hours must be at least lease.default_hours.")
    return errors


def _priority_errors(priority) -> list[str]:
    if not isinstance(priority, dict) or not {"tier", "preemptible"} <= set(priority) or set(priority) - PRIORITY_KEYS:
        return ["priority must be an object with tier and preemptible, and optionally preempts, min_runtime_minutes "
                "and grace_seconds."]
    errors = []
    if priority["tier"] not in PRIORITY_TIERS:
        errors.append(f"priority.tier must be one of {list(PRIORITY_TIERS)}.")
    errors += [f"priority.{flag} must be true or false." for flag in ("preemptible", "preempts")
               if flag in priority and not isinstance(priority[flag], bool)]
    for key, top, unit in (("grace_seconds", PRIORITY_MAX_GRACE_SECONDS, "seconds"),
                           ("min_runtime_minutes", PRIORITY_MAX_MIN_RUNTIME_MINUTES, "minutes")):
        value = priority.get(key)
        if key in priority and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top):
            errors.append(f"priority.{key} must be a whole number of {unit} from 0 to {top}.")
    if priority.get("preemptible") is True and "grace_seconds" not in priority:
        errors.append("priority.grace_seconds is needed for preemptible work: the time it gets to checkpoint.")
    if priority.get("preemptible") is False and "min_runtime_minutes" in priority:
        errors.append("priority.min_runtime_minutes applies only to preemptible work.")
    return errors

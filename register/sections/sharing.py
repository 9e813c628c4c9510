"""1. Sharing strategy per workload class: the rules of the policy in force with their sign-off; every combination
of the matchable answers that no route covers (it falls through to the platform default), with the requests of
the window that took that path; the current version's review and the drafts awaiting review, with their diffs."""
from __future__ import annotations

import itertools

from django.db import connection
from django.db.models import Count
from django.db.models.fields.json import KeyTextTransform
from django.urls import reverse

from intake.choices import PolicyStatus
from intake.decisions import PLATFORM_DEFAULT_STRATEGY, STRATEGY_WORDS, Answers, select_route
from intake.models import GpuRequest, PolicyVersion
from intake.policy_review import policy_version_diff
from intake.questionnaire import MATCHABLE_KEYS, QUESTIONS_BY_KEY
from intake.selectors import policy_spec

from ..choices import Section, Verdict
from .common import Item, SectionResult, Snapshot, plural, words

AREA = Section.SHARING_STRATEGY


def answer_combinations() -> list[dict[str, str]]:
    """Every combination of the answers a rule can match on, in questionnaire order."""
    options = [[o.value for o in QUESTIONS_BY_KEY[key].options] for key in MATCHABLE_KEYS]
    return [dict(zip(MATCHABLE_KEYS, values)) for values in itertools.product(*options)]


def _answers(combination: dict[str, str]) -> Answers:
    # Only the matchable answers take part in routing; size and image are placeholders.
    return Answers(gpu_memory_gb=1, image="placeholder", **combination)


def _rule_state(rule) -> str:
    ordered = sorted(rule.match.items(), key=lambda kv: MATCHABLE_KEYS.index(kv[0]) if kv[0] in MATCHABLE_KEYS else 99)
    match = ", ".join("/".join(words(v) for v in values) for _key, values in ordered)
    outcome = rule.outcome
    if rule.kind == "route":
        text = f"{match or 'anything'} -> {STRATEGY_WORDS[outcome['strategy']]}"
        extras = []
        if outcome.get("fallback_strategy"):
            extras.append(f"else {STRATEGY_WORDS[outcome['fallback_strategy']]}")
        if outcome.get("gang"):
            extras.append("gang")
        if outcome.get("fabric_isolation"):
            extras.append(f"{words(outcome['fabric_isolation'])} fabric")
        if outcome.get("auto_approve"):
            extras.append("approved automatically" + _auto_approve_caps(outcome.get("auto_approve_limits") or {}))
        return text + (f" ({', '.join(extras)})" if extras else "")
    effects = []
    if outcome.get("forbid_strategies"):
        replacement = STRATEGY_WORDS[outcome.get("replace_with", PLATFORM_DEFAULT_STRATEGY)]
        effects.append(f"never {', '.join(STRATEGY_WORDS[s] for s in outcome['forbid_strategies'])} "
                       f"({replacement} instead)")
    if outcome.get("fabric_isolation"):
        effects.append(f"{words(outcome['fabric_isolation'])} NVLink fabric")
    lease = outcome.get("lease") or {}
    if lease:
        effects.append("a lease of " + ", at most ".join(
            plural(int(h), "hour") for h in (lease.get("default_hours"), lease.get("max_hours")) if h))
    driver = outcome.get("driver") or {}
    if driver:
        effects.append("the NVIDIA driver " + " on the ".join(
            part for part in (f"{driver['min_major']} or newer" if driver.get("min_major") else "",
                              f"{driver['branch']} branch" if driver.get("branch") else "") if part))
    if outcome.get("priority"):
        effects.append(f"priority {outcome['priority']['tier']} (the Preemption section)")
    return f"guardrail on {match or 'anything'}: {'; '.join(effects) or 'no effect on placement'}"


def _counts(snapshot: Snapshot) -> tuple[dict, dict, dict]:
    """Requests created in the window: per route rule, per guardrail applied, and, among those that no rule
    decided (platform default), per combination of the matchable answers. Three queries."""
    window = GpuRequest.objects.filter(created_at__gte=snapshot.start, created_at__lte=snapshot.now)
    by_rule = dict(window.exclude(rule_key="").values_list("rule_key").annotate(n=Count("id")))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.key, count(*) FROM intake_gpurequest r "
            "CROSS JOIN LATERAL jsonb_array_elements_text(COALESCE(r.decision->'guardrails', '[]'::jsonb)) AS g(key) "
            "WHERE r.created_at >= %s AND r.created_at <= %s GROUP BY g.key",
            [snapshot.start, snapshot.now],
        )
        by_guardrail = dict(cursor.fetchall())
    keys = {f"a_{key}": KeyTextTransform(key, "answers") for key in MATCHABLE_KEYS}
    by_combination = {
        tuple(row[f"a_{key}"] for key in MATCHABLE_KEYS): row["n"]
        for row in window.filter(rule_key="").annotate(**keys).values(*keys).annotate(n=Count("id"))
    }
    return by_rule, by_guardrail, by_combination


def _version_summary(version: PolicyVersion) -> dict:
    return {
        "number": version.number, "status": version.status, "notes": version.notes,
        "signed_off_by": version.signed_off_by_name or None, "signed_off_at": version.signed_off_at,
        "review": version.review,
        "links": {"api": f"/api/v1/policy/versions/{version.number}/",
                  "admin": reverse("admin:intake_policyversion_change", args=[version.pk])},
    }  # fmt: skip


def _draft_summary(draft: PolicyVersion, days: int, now) -> dict:
    diff = policy_version_diff(version=draft, days=days, now=now)
    return {
        "number": draft.number, "notes": draft.notes, "created_at": draft.created_at,
        "created_by": draft.created_by.get_username() if draft.created_by else None,
        "baseline_version": diff.baseline_version, "days": diff.days, "evaluated": diff.evaluated,
        "changed_count": len(diff.changed), "by_workload_class": diff.by_workload_class,
        "rules_changed": [{"rule": c["rule"], "change": c["change"], "fields": c.get("fields", [])}
                          for c in diff.rules_changed],
        "digest": diff.digest,
        "links": {"diff": f"/api/v1/policy/versions/{draft.number}/diff/?days={diff.days}",
                  "review": reverse("admin:intake_policyversion_review", args=[draft.pk])},
    }  # fmt: skip


def build(snapshot: Snapshot) -> SectionResult:
    policy = snapshot.policy
    drafts = list(PolicyVersion.objects.filter(status=PolicyStatus.DRAFT).select_related("created_by")
                  .order_by("number"))
    draft_summaries = [_draft_summary(d, snapshot.days, snapshot.now) for d in drafts]
    if policy is None:
        item = Item(area=AREA, subject="routing policy", state="no policy version is in force",
                    verdict=Verdict.INHERITED, evidence={"drafts_awaiting_review": [d["number"] for d in drafts]},
                    notes=["Nothing routes requests: every request would take the platform default."])
        return SectionResult(key=AREA, title=Section(AREA).label, items=[item],
                             summary={"policy_version": None, "drafts_awaiting_review": draft_summaries})
    spec = policy_spec(policy)
    by_rule, by_guardrail, by_combination = _counts(snapshot)
    items: list[Item] = []
    for rule in policy.rules.all():
        signed = bool(rule.signed_off_at and rule.signed_off_by)
        used = (by_rule if rule.kind == "route" else by_guardrail).get(rule.key, 0)
        verb = "decided" if rule.kind == "route" else "applied to"
        items.append(Item(
            area=AREA, subject=f"{rule.kind} {rule.key}", state=_rule_state(rule),
            verdict=Verdict.DECIDED if signed else Verdict.INHERITED, owner=rule.owner,
            signed_off_by=rule.signed_off_by or None, signed_off_at=rule.signed_off_at, rationale=rule.rationale,
            evidence={"rule": rule.key, "kind": rule.kind, "policy_version": policy.number, "match": rule.match,
                      "outcome": rule.outcome, "position": rule.position, "requests_in_window": used},
            notes=[f"{verb.capitalize()} {plural(used, 'request')} in the last {snapshot.days} days."
                   + ("" if signed else " Nobody signed this rule off.")],
        ))  # fmt: skip
    combinations = answer_combinations()
    fall_through = 0
    for combination in combinations:
        answers = _answers(combination)
        if select_route(spec, answers) is not None:
            continue
        fall_through += 1
        guardrails = [g.key for g in spec.guardrails() if g.matches(answers)]
        count = by_combination.get(tuple(combination[k] for k in MATCHABLE_KEYS), 0)
        state = f"no route: platform default ({STRATEGY_WORDS[PLATFORM_DEFAULT_STRATEGY]})"
        if guardrails:
            state += f", then guardrail {', '.join(guardrails)}"
        items.append(Item(
            area=AREA, subject=" / ".join(words(combination[k]) for k in MATCHABLE_KEYS), state=state,
            verdict=Verdict.INHERITED, owner=None,
            rationale="No route matches these answers; the platform default applies, which nobody decided for "
                      "this kind of workload.",
            evidence={"answers": combination, "falls_through": True, "default_strategy": PLATFORM_DEFAULT_STRATEGY,
                      "guardrails": guardrails, "requests_in_window": count},
            notes=[f"{plural(count, 'request')} in the last {snapshot.days} days took the platform default with "
                   "these answers."],
        ))  # fmt: skip
    routes = [r for r in policy.rules.all() if r.kind == "route"]
    summary = {
        "policy_version": _version_summary(policy),
        "drafts_awaiting_review": draft_summaries,
        "rules": len(items) - fall_through, "rules_signed_off": sum(1 for r in policy.rules.all() if r.signed_off_at),
        "routes": len(routes), "combinations": len(combinations), "falling_through": fall_through,
        "requests_falling_through_in_window": sum(by_combination.values()),
        "matchable_answers": list(MATCHABLE_KEYS),
    }  # fmt: skip
    notes = [f"{fall_through} of {len(combinations)} combinations of "
                 f"{', '.join(words(k) for k in MATCHABLE_KEYS)} match no route and fall through to the platform "
                 f"default; {plural(summary['requests_falling_through_in_window'], 'request')} took that path in the "
                 f"last {snapshot.days} days."]
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary, notes=notes)


def _auto_approve_caps(limits: dict) -> str:
    caps = []
    if "per_request" in limits:
        caps.append(f"up to {limits['per_request']:g} GPU equivalents a request")
    if "per_team" in limits:
        caps.append(f"{limits['per_team']:g} a team at once")
    if limits.get("without_quota"):
        caps.append("also for teams without a quota")
    return f" {', '.join(caps)}" if caps else ""

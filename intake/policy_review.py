"""Policy changes as reviewed diffs: before a draft is signed off, re-evaluate recent requests under it and
under the version in force, and show what would change. The sign-off records the digest of the diff that was
seen, so a rule edited after the review cannot slip through."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

from django.utils import timezone

from portal.errors import PermissionDenied
from portal.roles import is_platform

from .choices import PolicyStatus
from .decisions import Answers, PlacementImpossible, decide
from .hooks import inventory_snapshot
from .models import GpuRequest, PolicyVersion
from .selectors import policy_spec

# The parts of a decision a policy change is about. Placement details (pool order) follow from these.
COMPARED_FIELDS = ("strategy", "mig_profile", "gpu_model", "memory_isolation", "fabric_isolation", "gang",
                   "auto_approve", "rule")
MAX_DAYS = 365


@dataclass
class PolicyDiff:
    version: int
    baseline_version: int | None
    days: int
    evaluated: int = 0
    changed: list[dict] = field(default_factory=list)
    by_workload_class: dict[str, dict[str, int]] = field(default_factory=dict)
    rules_changed: list[dict] = field(default_factory=list)
    digest: str = ""

    def as_dict(self) -> dict:
        return {
            "version": self.version,
            "baseline_version": self.baseline_version,
            "days": self.days,
            "evaluated": self.evaluated,
            "changed_count": len(self.changed),
            "by_workload_class": self.by_workload_class,
            "rules_changed": self.rules_changed,
            "changed": self.changed,
            "digest": self.digest,
        }


def _rules_content(version: PolicyVersion) -> dict[str, dict]:
    return {
        r.key: {"kind": r.kind, "position": r.position, "match": r.match, "outcome": r.outcome,
                "rationale": r.rationale, "owner": r.owner}
        for r in version.rules.all()
    }


def _evaluate(answers: Answers, spec, inventory) -> dict:
    try:
        decision = decide(answers, spec, inventory)
    except PlacementImpossible as exc:
        return {"refused": exc.message}
    return decision.to_json(only=COMPARED_FIELDS)


def rules_diff(before: dict[str, dict], after: dict[str, dict]) -> list[dict]:
    changes = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            changes.append({"rule": key, "change": "removed", "before": before[key], "after": None})
        elif key not in before:
            changes.append({"rule": key, "change": "added", "before": None, "after": after[key]})
        elif before[key] != after[key]:
            fields = sorted(k for k in after[key] if before[key].get(k) != after[key][k])
            changes.append({"rule": key, "change": "changed", "fields": fields, "before": before[key],
                            "after": after[key]})
    return changes


def policy_version_diff(*, version: PolicyVersion, days: int = 30, now=None) -> PolicyDiff:
    """Re-evaluate the requests created in the last `days` days under `version` and under the version it would
    replace (the one in force, for a draft; its parent otherwise), both against today's inventory so that only
    the policy change shows, and list every request whose decision
    would change, with counts per workload class."""
    days = max(1, min(int(days), MAX_DAYS))
    now = now or timezone.now()
    if version.status == PolicyStatus.DRAFT:
        baseline = PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE).first()
    else:
        baseline = version.based_on
    diff = PolicyDiff(version=version.number, baseline_version=baseline.number if baseline else None, days=days)
    after_spec = policy_spec(version)
    before_spec = policy_spec(baseline) if baseline else None
    inventory = inventory_snapshot()
    requests = (
        GpuRequest.objects.filter(created_at__gte=now - timezone.timedelta(days=days))
        .select_related("team")
        .order_by("id")
    )
    evaluated, changed = Counter(), Counter()
    for gpu_request in requests.iterator(chunk_size=500):
        answers = Answers.from_dict(gpu_request.answers, gpu_request.defaulted_answers)
        after = _evaluate(answers, after_spec, inventory)
        before = _evaluate(answers, before_spec, inventory) if before_spec else {}
        evaluated[gpu_request.workload_class] += 1
        changes = {key: [before.get(key), after.get(key)] for key in sorted(before.keys() | after.keys())
                   if before.get(key) != after.get(key)}
        if changes:
            changed[gpu_request.workload_class] += 1
            diff.changed.append({"request": gpu_request.pk, "team": gpu_request.team.slug, "name": gpu_request.name,
                                 "workload_class": gpu_request.workload_class, "status": gpu_request.status,
                                 "changes": changes})
    diff.evaluated = sum(evaluated.values())
    diff.by_workload_class = {cls: {"evaluated": evaluated[cls], "changed": changed[cls]} for cls in sorted(evaluated)}
    diff.rules_changed = rules_diff(_rules_content(baseline) if baseline else {}, _rules_content(version))
    diff.digest = review_digest(version=version, baseline_number=diff.baseline_version)
    return diff


def review_digest(*, version: PolicyVersion, baseline_number: int | None) -> str:
    """Identifies what was reviewed: the draft's rules and the version it would replace."""
    payload = json.dumps({"rules": _rules_content(version), "baseline": baseline_number}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def policy_version_review(*, user, version: PolicyVersion, days: int = 30):
    """The diff a draft would make; it names other teams' requests, so it is for the platform team."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team reviews policy changes.")
    return policy_version_diff(version=version, days=days)

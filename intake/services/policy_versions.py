"""Writes for the routing policy: drafting a new version from the one in force, and signing a draft off after its
effect was reviewed (it becomes the version in force)."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from portal.errors import Conflict, InvalidInput, PermissionDenied
from portal.roles import is_platform

from ..choices import PolicyStatus
from ..models import PolicyVersion, Rule
from ..policy import rule_validation_errors
from ..policy_review import policy_version_diff


@transaction.atomic
def policy_version_draft_create(*, user, based_on: PolicyVersion | None = None, notes: str = "") -> PolicyVersion:
    """A new draft version holding a copy of the rules of `based_on` (the active version by default)."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team drafts routing policy.")
    if based_on is None:
        based_on = PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE).first()
    number = (PolicyVersion.objects.select_for_update(no_key=True).order_by("-number").values_list("number", flat=True).first() or 0) + 1
    draft = PolicyVersion.objects.create(number=number, based_on=based_on, created_by=user, notes=notes)
    if based_on is not None:
        Rule.objects.bulk_create(
            Rule(
                version=draft,
                key=r.key,
                kind=r.kind,
                position=r.position,
                match=r.match,
                outcome=r.outcome,
                rationale=r.rationale,
                owner=r.owner,
                signed_off_by=r.signed_off_by,
                signed_off_at=r.signed_off_at,
            )
            for r in based_on.rules.all()
        )
    return draft


def _rule_content(rule: Rule) -> tuple:
    return (rule.kind, rule.position, rule.match, rule.outcome, rule.rationale, rule.owner)


@transaction.atomic
def policy_version_sign_off(*, user, version_id: int, reviewed_digest: str, days: int = 30) -> PolicyVersion:
    """Sign off a draft after reviewing its effect: it becomes the active version, the previous one is retired.
    `reviewed_digest` is the digest of the diff the signer saw (`policy_version_diff`); if the rules or the
    version in force changed since, the sign-off is refused and the diff must be looked at again. Rules that
    are new or changed are signed off by this user now; unchanged rules keep the sign-off they had."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team signs off routing policy.")
    version = PolicyVersion.objects.select_for_update(no_key=True).get(pk=version_id)
    if version.status != PolicyStatus.DRAFT:
        raise Conflict(f"Policy v{version.number} is {version.status}; only a draft can be signed off.")
    diff = policy_version_diff(version=version, days=days)
    if reviewed_digest != diff.digest:
        raise InvalidInput(
            "The draft or the policy in force changed since this diff was reviewed; review the effect again.",
            field="digest",
        )
    rules = list(version.rules.all())
    if not any(r.kind == "route" for r in rules):
        raise InvalidInput("A policy needs at least one route rule.", field="rules")
    for rule in rules:
        errors = rule_validation_errors(kind=rule.kind, match=rule.match, outcome=rule.outcome)
        if errors:
            raise InvalidInput(f"Rule {rule.key}: {errors}", field="rules")
    previous = {}
    if version.based_on_id:
        previous = {r.key: r for r in version.based_on.rules.all()}
    now = timezone.now()
    signer = user.get_username()
    for rule in rules:
        before = previous.get(rule.key)
        if before is None or _rule_content(before) != _rule_content(rule) or not before.signed_off_at:
            rule.signed_off_by, rule.signed_off_at = signer, now
            rule.save(update_fields=["signed_off_by", "signed_off_at"])
    PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE).update(status=PolicyStatus.RETIRED)
    version.status = PolicyStatus.ACTIVE
    version.signed_off_by = user
    version.signed_off_by_name = signer
    version.signed_off_at = now
    version.activated_at = now
    version.review = {
        "digest": diff.digest, "days": diff.days, "baseline_version": diff.baseline_version,
        "evaluated": diff.evaluated, "changed_count": len(diff.changed), "by_workload_class": diff.by_workload_class,
        "changed_requests": [c["request"] for c in diff.changed], "reviewed_by": signer, "reviewed_at": now.isoformat(),
    }
    version.save()
    return version

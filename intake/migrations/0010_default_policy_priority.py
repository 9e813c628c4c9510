"""The shipped priority rules (intake/default_policy.py: inference-priority, training-priority,
development-priority) for installations whose policy predates them: a draft version, based on the active one, that
adds them for the platform team to review and sign off in the admin. A policy is never changed behind its signer's
back, so nothing is activated here; a fresh installation gets them in version 1 (0002)."""
from django.db import migrations

PRIORITY_KEYS = ("inference-priority", "training-priority", "development-priority")


def draft(apps, schema_editor):
    from intake.default_policy import DEFAULT_OWNER, DEFAULT_RULES

    PolicyVersion = apps.get_model("intake", "PolicyVersion")
    Rule = apps.get_model("intake", "Rule")
    active = PolicyVersion.objects.filter(status="active").first()
    if active is None or Rule.objects.filter(version=active, outcome__has_key="priority").exists():
        return
    if PolicyVersion.objects.filter(based_on=active, status="draft", notes__startswith="Shipped priority").exists():
        return
    number = (PolicyVersion.objects.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    version = PolicyVersion.objects.create(
        number=number, status="draft", based_on=active,
        notes="Shipped priority rules: production inference above training above development, preemption and "
              "checkpoint grace per workload class (docs/policy.md, \"Priority and preemption\"). Review and sign off.")
    for rule in Rule.objects.filter(version=active):
        Rule.objects.create(version=version, key=rule.key, kind=rule.kind, position=rule.position, match=rule.match,
                            outcome=rule.outcome, rationale=rule.rationale, owner=rule.owner)
    taken = set(Rule.objects.filter(version=version).values_list("key", flat=True))
    for rule in DEFAULT_RULES:
        if rule["key"] in PRIORITY_KEYS and rule["key"] not in taken:
            Rule.objects.create(version=version, owner=DEFAULT_OWNER, **rule)


class Migration(migrations.Migration):
    dependencies = [("intake", "0009_names_in_words")]
    operations = [migrations.RunPython(draft, migrations.RunPython.noop)]

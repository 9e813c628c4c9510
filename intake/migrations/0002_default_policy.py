"""Version 1 of the routing policy: the defaults in intake/default_policy.py, signed off as the initial policy."""
from django.db import migrations
from django.utils import timezone


def load(apps, schema_editor):
    from intake.default_policy import DEFAULT_OWNER, DEFAULT_RULES

    PolicyVersion = apps.get_model("intake", "PolicyVersion")
    Rule = apps.get_model("intake", "Rule")
    if PolicyVersion.objects.exists():
        return
    now = timezone.now()
    signer = f"{DEFAULT_OWNER} (initial policy)"
    version = PolicyVersion.objects.create(
        number=1,
        status="active",
        notes="The portal's default routing policy, as shipped.",
        signed_off_by_name=signer,
        signed_off_at=now,
        activated_at=now,
    )
    for rule in DEFAULT_RULES:
        Rule.objects.create(version=version, owner=DEFAULT_OWNER, signed_off_by=signer, signed_off_at=now, **rule)


class Migration(migrations.Migration):
    dependencies = [("intake", "0001_initial")]
    operations = [migrations.RunPython(load, migrations.RunPython.noop)]

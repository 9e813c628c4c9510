"""Idle notices become portal notices (portal.Notice, key "idle:<episode id>"), which gives them the notices'
redispatch sweep: existing rows are copied with their status, attempts and times, then the table is dropped.
A notice waiting for a retry is copied as queued: its retry message names the task this release removes, so
the sweep sends it instead.

And two partial indexes for the report: the open intervals with every column it reads of them (an index-only
scan), and the demo intervals (the finance page asks whether the period has any)."""

from django.db import migrations, models


def _key(allocation_id: int) -> str:
    return f"idle:{allocation_id}"


def to_portal_notices(apps, schema_editor):
    IdleNotification = apps.get_model("chargeback", "IdleNotification")
    Notice = apps.get_model("portal", "Notice")
    for old in IdleNotification.objects.select_related("allocation__request").order_by("id").iterator():
        notice, created = Notice.objects.get_or_create(key=_key(old.allocation_id), channel=old.channel, defaults={
            "team_id": old.allocation.request.team_id, "target": old.target, "payload": old.payload,
            "status": "queued" if old.status == "retrying" else old.status, "attempts": old.attempts,
            "message": old.message, "sent_at": old.sent_at,
        })
        if created:  # auto_now_add / auto_now stamped the copy: keep the original times
            Notice.objects.filter(pk=notice.pk).update(created_at=old.created_at, updated_at=old.updated_at)


def to_idle_notifications(apps, schema_editor):
    IdleAllocation = apps.get_model("chargeback", "IdleAllocation")
    IdleNotification = apps.get_model("chargeback", "IdleNotification")
    Notice = apps.get_model("portal", "Notice")
    episodes = set(IdleAllocation.objects.values_list("pk", flat=True))
    for notice in Notice.objects.filter(key__startswith="idle:").order_by("id"):
        allocation_id = int(notice.key.removeprefix("idle:"))
        if allocation_id in episodes:
            copy = IdleNotification.objects.create(
                allocation_id=allocation_id, channel=notice.channel, target=notice.target, payload=notice.payload,
                status=notice.status, attempts=notice.attempts, message=notice.message, sent_at=notice.sent_at)
            IdleNotification.objects.filter(pk=copy.pk).update(created_at=notice.created_at,
                                                               updated_at=notice.updated_at)
        notice.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("chargeback", "0009_idle_gpus"),
        ("portal", "0006_team_notices"),
    ]

    operations = [
        migrations.RunPython(to_portal_notices, to_idle_notifications),
        migrations.DeleteModel(name="IdleNotification"),
        migrations.AddIndex(
            model_name="usageinterval",
            index=models.Index(
                condition=models.Q(("ended_at__isnull", True)), fields=["started_at"],
                include=("team_id", "cost_center", "cluster", "strategy", "gpu_model", "mig_profile", "request_id",
                         "category", "devices", "equivalents_num", "equivalents_den"),
                name="chargeback_interval_open_cover"),
        ),
        migrations.AddIndex(
            model_name="usageinterval",
            index=models.Index(condition=models.Q(("is_demo", True)), fields=["started_at"],
                               name="chargeback_interval_demo"),
        ),
    ]

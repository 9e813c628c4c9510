"""Stalled-gang notifications become portal notices (portal.Notice, key "gang-stall:<stall id>:<kind>", about
their stall), so one outbox, one task and one sweep deliver every notice: existing rows are copied with their
status, attempts, message, channel, target, payload and times (0022 then drops the table). A notification waiting
for a retry is copied as queued: its retry message names the task this release removes, so the sweep sends it
instead. Migrating back copies the stall notices back and deletes them from portal.Notice."""

from django.db import migrations


def _key(stall_id: int, kind: str) -> str:
    return f"gang-stall:{stall_id}:{kind}"  # provisioning.models.stall_notice_key, as of this migration


def to_portal_notices(apps, schema_editor):
    GangNotification = apps.get_model("provisioning", "GangNotification")
    Notice = apps.get_model("portal", "Notice")
    ContentType = apps.get_model("contenttypes", "ContentType")
    rows = GangNotification.objects.select_related("stall__request").order_by("id")
    if not rows.exists():
        return
    about_type, _ = ContentType.objects.get_or_create(app_label="provisioning", model="gangstall")
    for old in rows.iterator():
        notice, created = Notice.objects.get_or_create(key=_key(old.stall_id, old.kind), channel=old.channel, defaults={
            "team_id": old.stall.request.team_id, "target": old.target, "payload": old.payload,
            "status": "queued" if old.status == "retrying" else old.status, "attempts": old.attempts,
            "message": old.message, "sent_at": old.sent_at, "about_type": about_type, "about_id": old.stall_id,
        })
        if created:  # auto_now_add / auto_now stamped the copy: keep the original times
            Notice.objects.filter(pk=notice.pk).update(created_at=old.created_at, updated_at=old.updated_at)


def to_gang_notifications(apps, schema_editor):
    GangNotification = apps.get_model("provisioning", "GangNotification")
    GangStall = apps.get_model("provisioning", "GangStall")
    Notice = apps.get_model("portal", "Notice")
    stalls = set(GangStall.objects.values_list("pk", flat=True))
    for notice in Notice.objects.filter(key__startswith="gang-stall:").order_by("id"):
        _, stall_id, kind = notice.key.split(":")
        if int(stall_id) in stalls:
            copy = GangNotification.objects.create(
                stall_id=int(stall_id), kind=kind, channel=notice.channel, target=notice.target,
                payload=notice.payload, status=notice.status, attempts=notice.attempts, message=notice.message,
                sent_at=notice.sent_at)
            GangNotification.objects.filter(pk=copy.pk).update(created_at=notice.created_at,
                                                               updated_at=notice.updated_at)
        notice.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("portal", "0010_notice_about"),
        ("provisioning", "0020_admission_binding"),
    ]

    operations = [
        migrations.RunPython(to_portal_notices, to_gang_notifications),
    ]

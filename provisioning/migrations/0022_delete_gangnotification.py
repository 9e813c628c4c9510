"""The stalled-gang notifications' table, now empty of anything not also in portal.Notice (0021)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("provisioning", "0021_gang_notices_are_portal_notices"),
    ]

    operations = [
        migrations.DeleteModel(name="GangNotification"),
    ]

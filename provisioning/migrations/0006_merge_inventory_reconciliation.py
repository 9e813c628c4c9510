# Joins the two branches of provisioning migrations: live cluster operations (inventory) and reconciliation.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('provisioning', '0005_inventory'),
        ('provisioning', '0005_reconciliation'),
    ]

    operations = [
    ]

import provisioning.models
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("provisioning", "0006_merge_inventory_reconciliation"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="dra_device_classes",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='DRA DeviceClasses seen: [{"name", "extended_resource_name", "selectors"}]',
            ),
        ),
        migrations.AddField(
            model_name="cluster",
            name="dra_feature_gates",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='NVIDIA DRA driver feature gates turned on in its Helm values, e.g. ["TimeSlicingSettings"]',
                validators=[provisioning.models.dra_feature_gates_validator],
            ),
        ),
    ]

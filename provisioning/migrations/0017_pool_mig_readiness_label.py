from django.db import migrations, models


def catalogue(apps, schema_editor):
    """The catalogue gained GB300, B300, GH200 and RTX PRO 6000 Blackwell (gpu/data, mig-parted v0.15.0)."""
    from provisioning.services import catalogue_sync

    catalogue_sync(gpu_model_cls=apps.get_model("provisioning", "GpuModel"),
                   mig_profile_cls=apps.get_model("provisioning", "MigProfile"))


class Migration(migrations.Migration):

    dependencies = [
        ('provisioning', '0016_cluster_prometheus_url'),
    ]

    operations = [
        migrations.AddField(
            model_name='nodepool',
            name='mig_readiness_label',
            field=models.BooleanField(blank=True, help_text="do mig-manager's nvidia.com/mig.config.state labels mark this pool's MIG nodes ready? unknown: as discovery saw the nodes", null=True, verbose_name='MIG readiness label'),
        ),
        migrations.RunPython(catalogue, migrations.RunPython.noop),
    ]

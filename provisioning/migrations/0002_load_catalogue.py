from django.db import migrations


def load(apps, schema_editor):
    from provisioning.services import catalogue_sync

    catalogue_sync(gpu_model_cls=apps.get_model("provisioning", "GpuModel"),
                   mig_profile_cls=apps.get_model("provisioning", "MigProfile"))


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0001_initial")]
    operations = [migrations.RunPython(load, migrations.RunPython.noop)]

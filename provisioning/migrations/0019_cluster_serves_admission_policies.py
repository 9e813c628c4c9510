from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0018_names_in_words")]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="serves_admission_policies",
            field=models.BooleanField(
                blank=True, null=True,
                help_text="the API server serves admissionregistration.k8s.io/v1 validatingadmissionpolicies: without "
                          "Kueue, each team namespace gets one (docs/admission-check.md); null: never synced",
            ),
        ),
    ]

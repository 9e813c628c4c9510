import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('intake', '0009_names_in_words'),
        ('provisioning', '0019_cluster_serves_admission_policies'),
    ]

    operations = [
        migrations.AddField(
            model_name='admissionworkload',
            name='applied_owner_uid',
            field=models.CharField(blank=True, help_text='uid of the object up its owner chain the portal applied, if any', max_length=64),
        ),
        migrations.CreateModel(
            name='AdmissionBinding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('workload_uid', models.CharField(max_length=64)),
                ('owner_uid', models.CharField(blank=True, max_length=64)),
                ('namespace', models.CharField(max_length=63)),
                ('shape', models.JSONField(default=list, help_text='[{count, devices_per_pod, claims_per_pod, images}] approved')),
                ('bound_at', models.DateTimeField(auto_now_add=True)),
                ('cluster', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='admission_bindings', to='provisioning.cluster')),
                ('request', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='admission_binding', to='intake.gpurequest')),
            ],
            options={'ordering': ['request_id']},
        ),
    ]

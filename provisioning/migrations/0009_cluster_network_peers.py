import provisioning.models
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("provisioning", "0008_cluster_credentials")]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="ingress_namespace",
            field=models.CharField(
                blank=True,
                help_text="namespace of the ingress controller, admitted to inference pods' HTTP port; blank: none",
                max_length=63,
                validators=[provisioning.models.namespace_validator],
            ),
        ),
        migrations.AddField(
            model_name="cluster",
            name="ingress_pod_labels",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text='labels of the ingress controller\'s pods, e.g. {"app.kubernetes.io/name": "ingress-nginx"}; '
                "empty: every pod of its namespace",
                validators=[provisioning.models.pod_labels_validator],
            ),
        ),
        migrations.AddField(
            model_name="cluster",
            name="metrics_namespace",
            field=models.CharField(
                blank=True,
                help_text="namespace of the metrics scraper (e.g. Prometheus), admitted to every port; blank: none",
                max_length=63,
                validators=[provisioning.models.namespace_validator],
            ),
        ),
        migrations.AddField(
            model_name="cluster",
            name="metrics_pod_labels",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="labels of the scraper's pods; empty: every pod of its namespace",
                validators=[provisioning.models.pod_labels_validator],
            ),
        ),
    ]

from rest_framework import serializers

from ..models import Cluster, NodePool


class NodePoolSerializer(serializers.ModelSerializer):
    gpu_model = serializers.SlugRelatedField(slug_field="key", read_only=True)
    scheduling_model = serializers.CharField(source="effective_scheduling_model", read_only=True)

    class Meta:
        model = NodePool
        fields = [
            "id",
            "name",
            "gpu_model",
            "node_count",
            "gpus_per_node",
            "sharing_mode",
            "mig_strategy",
            "mig_layout",
            "time_slicing_replicas",
            "driver_version",
            "nvlink_domain",
            "scheduling_model",
            "source",
        ]
        read_only_fields = fields


class ClusterSerializer(serializers.ModelSerializer):
    """Never includes credentials: they live in ClusterCredential, which no serializer exposes."""

    pools = NodePoolSerializer(many=True, read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "description",
            "kubernetes_version",
            "scheduling_model",
            "gang_scheduler",
            "applier",
            "enabled",
            "pools",
        ]
        read_only_fields = fields

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.fields import CharField, IntegerField

from .. import selectors
from ..choices import CredentialSource
from ..models import Cluster, ClusterCredential, Node, NodePool


class NodePoolSerializer(serializers.ModelSerializer):
    gpu_model = serializers.SlugRelatedField(slug_field="key", read_only=True)
    scheduling_model = CharField(source="effective_scheduling_model", read_only=True)

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
            "mig_readiness_label",
            "time_slicing_replicas",
            "driver_version",
            "nvlink_domain",
            "scheduling_model",
            "source",
            "node_selector",
            "discovered",
            "discrepancies",
            "last_seen_at",
            "capacity",
            "device_plugin_config",
            "device_plugin_sharing_config",
        ]
        read_only_fields = fields

    capacity = serializers.SerializerMethodField(help_text="free and used GPUs by strategy on the pool's nodes")
    device_plugin_sharing_config = serializers.SerializerMethodField(
        help_text="the NVIDIA device plugin config (ConfigMap entry, k8s-device-plugin api/config/v1) the pool's "
        "nodes must run for the pods rendered here; null on DRA pools")

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_device_plugin_sharing_config(self, pool) -> dict | None:
        return selectors.pool_device_plugin_config(pool=pool)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_capacity(self, pool) -> dict:
        return selectors.capacity_of(n for n in pool.cluster.nodes.all() if n.pool_id == pool.id)


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
            "dra_feature_gates",
            "gang_scheduler_owns_gpu_nodes",
            "dra_mps_support",
            "applier",
            "enabled",
            # Who may reach pods in team namespaces besides the team (NetworkPolicies).
            "ingress_namespace",
            "ingress_pod_labels",
            "metrics_namespace",
            "metrics_pod_labels",
            "idle_gpus_watched",
            "pools",
            "discovered_kubernetes_version",
            "discovered_gang_schedulers",
            "dra_in_use",
            "dra_device_classes",
            "discrepancies",
            "last_synced_at",
            "last_sync_attempt_at",
            "last_sync_error",
            "node_count",
            "capacity",
        ]
        read_only_fields = fields

    node_count = serializers.SerializerMethodField(help_text="GPU nodes present at the last sync")
    capacity = serializers.SerializerMethodField(help_text="free and used GPUs by strategy, over all GPU nodes")
    last_sync_error = serializers.SerializerMethodField(
        help_text="why the last sync did not happen; the detail (which may quote the API server) for the platform "
                  "team only"
    )

    def get_last_sync_error(self, cluster) -> str:
        return selectors.cluster_sync_error_for(user=self.context["request"].user, cluster=cluster)

    # Whether, not where: the Prometheus address is the platform team's configuration, like the API server's.
    idle_gpus_watched = serializers.SerializerMethodField(
        help_text="a prometheus_url is set: idle GPUs and right-sizing are looked for on this cluster")

    def get_idle_gpus_watched(self, cluster) -> bool:
        return bool(cluster.prometheus_url)

    def get_node_count(self, cluster) -> int:
        return len(cluster.nodes.all())

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_capacity(self, cluster) -> dict:
        return selectors.capacity_of(cluster.nodes.all())


# --- cluster operations ----------------------------------------------------------------------


class NodeSerializer(serializers.ModelSerializer):
    """A GPU node as last discovered. Which pods hold its GPUs is not shown (they belong to many teams)."""

    pool = serializers.SlugRelatedField(slug_field="name", read_only=True)
    gpu_model = serializers.SlugRelatedField(slug_field="key", read_only=True)
    gpu_free = serializers.SerializerMethodField(help_text="allocatable minus held, per resource (0 when cordoned)")
    gpu_pod_count = serializers.SerializerMethodField(help_text="non-terminated pods holding GPUs here")
    scheduling_model = CharField(read_only=True, help_text="device_plugin, dra, or both (a conflict)")

    class Meta:
        model = Node
        fields = [
            "name", "pool", "gpu_model", "gpu_product", "gpu_count", "sharing_mode", "mig_strategy", "mig_config",
            "mig_config_state", "mig_devices", "gpu_replicas", "driver_version", "clique", "device_plugin_config",
            "scheduling_model", "unschedulable", "taints", "gpu_resources", "gpu_used", "gpu_free", "gpu_pod_count",
            "usable", "labels", "last_seen_at",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_gpu_free(self, node) -> dict:
        if node.unschedulable:
            return {key: 0 for key in node.gpu_resources}
        return {key: max(total - (node.gpu_used or {}).get(key, 0), 0) for key, total in node.gpu_resources.items()}

    def get_gpu_pod_count(self, node) -> int:
        return len(node.gpu_pods or [])


class ClusterDetailSerializer(ClusterSerializer):
    nodes = NodeSerializer(many=True, read_only=True)

    class Meta(ClusterSerializer.Meta):
        fields = [*ClusterSerializer.Meta.fields, "nodes"]
        read_only_fields = fields


class ProjectionSerializer(serializers.Serializer):
    expected_hours = serializers.FloatField(allow_null=True)
    gpu_equivalents = serializers.FloatField()
    gpu_hours = serializers.FloatField(allow_null=True, help_text="gpu_equivalents x expected_hours")
    devices = IntegerField(help_text="GPUs, slices or shares: gpus_per_replica x replicas")
    device_hours = serializers.FloatField(allow_null=True)
    note = CharField()


class QuotaSerializer(serializers.Serializer):
    strategy = CharField()
    limit = serializers.FloatField(allow_null=True, help_text="null: no quota set, unlimited (inherited)")
    inherited = serializers.BooleanField()
    held = serializers.FloatField(help_text="GPU equivalents of the team's approved..stalled requests")
    requested = serializers.FloatField()
    would_hold = serializers.FloatField()
    exceeded = serializers.BooleanField()
    message = CharField()


class FitDemandSerializer(serializers.Serializer):
    resource = CharField()
    per_pod = IntegerField()
    pods = IntegerField()
    gang = serializers.BooleanField()
    gpu_model = CharField()
    min_driver_major = IntegerField(allow_null=True)


class PlacementSerializer(serializers.Serializer):
    node = CharField()
    pods = IntegerField()


class MustFinishSerializer(serializers.Serializer):
    request_id = IntegerField(allow_null=True)
    team = CharField()
    label = CharField()
    expected_end = serializers.DateTimeField(allow_null=True)


class ExcludedNodeSerializer(serializers.Serializer):
    node = CharField()
    reason = CharField()


class FitSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=["fits_now", "fits_after", "never"])
    reason = CharField()
    basis = serializers.ChoiceField(choices=["discovered", "declared"],
                                    help_text="declared: the cluster was never synced; running work is unknown")
    synced_at = serializers.DateTimeField(allow_null=True)
    cluster = CharField()
    node_pool = CharField()
    demand = FitDemandSerializer(allow_null=True)
    pods_fitting_now = IntegerField()
    placement = PlacementSerializer(many=True)
    must_finish = MustFinishSerializer(many=True)
    excluded_nodes = ExcludedNodeSerializer(many=True)
    projection = ProjectionSerializer()
    quota = QuotaSerializer()


class UpgradeImpactInputSerializer(serializers.Serializer):
    driver_version = serializers.RegexField(
        selectors.DRIVER_VERSION_RE, max_length=20,
        error_messages={"invalid": "A driver version such as 580.65.06."},
    )


class AffectedRequestSerializer(serializers.Serializer):
    request_id = IntegerField()
    name = CharField()
    status = CharField()
    team = CharField()
    cost_center = CharField()
    requested_by = CharField()
    requested_by_email = CharField()
    min_driver_major = IntegerField(allow_null=True)
    strategy = CharField()
    reason = CharField()


class UpgradeImpactSerializer(serializers.Serializer):
    cluster = CharField()
    pool = CharField()
    driver_version = CharField()
    driver_major = IntegerField()
    current_driver_versions = serializers.ListField(child=CharField())
    requests_checked = IntegerField()
    affected = AffectedRequestSerializer(many=True)


class SyncQueuedSerializer(serializers.Serializer):
    cluster = CharField()
    status = CharField()
    message = CharField()


# --- cluster writes (platform team) -----------------------------------------------------------------------------


class ClusterUpdateInputSerializer(serializers.Serializer):
    """Shape only; the URL itself (scheme, where it resolves) is checked by the service, on the same field."""

    api_server = CharField(required=False, max_length=200)
    description = CharField(required=False, allow_blank=True, max_length=200)
    enabled = serializers.BooleanField(required=False)


class ClusterCredentialInputSerializer(serializers.Serializer):
    """Write-only: nothing here is ever answered back."""

    source = serializers.ChoiceField(choices=CredentialSource.choices, default=CredentialSource.TOKEN)
    token = CharField(required=False, allow_blank=True, trim_whitespace=True, write_only=True)
    ca_cert = CharField(required=False, allow_blank=True, trim_whitespace=False,
                                    help_text="PEM CA bundle of the API server")
    insecure_skip_tls_verify = serializers.BooleanField(default=False,
                                                        help_text="skip certificate verification (logged)")
    kubeconfig_path = CharField(required=False, allow_blank=True, max_length=500, default="")
    kubeconfig_context = CharField(required=False, allow_blank=True, max_length=253, default="")
    secret_namespace = CharField(required=False, allow_blank=True, max_length=63, default="")
    secret_name = CharField(required=False, allow_blank=True, max_length=253, default="")
    secret_key = CharField(required=False, max_length=253, default="token")


class ClusterCredentialSerializer(serializers.ModelSerializer):
    """What the API says about credentials: where they come from and for which server; never the token."""

    has_token = serializers.SerializerMethodField()

    class Meta:
        model = ClusterCredential
        fields = ["source", "server", "insecure_skip_tls_verify", "kubeconfig_path", "kubeconfig_context",
                  "secret_namespace", "secret_name", "secret_key", "has_token", "updated_at"]
        read_only_fields = fields

    def get_has_token(self, credential) -> bool:
        return bool(credential.token)


class WaitBlockerSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["quota", "capacity", "admission", "gang", "scheduling"])
    source = CharField(help_text="the object and field that said so, e.g. a Kueue Workload's QuotaReserved")
    reason = CharField(help_text="the scheduler's reason, verbatim (WaitingForQuota, Unschedulable, ...)")
    message = CharField(help_text="the scheduler's message, verbatim")
    words = CharField(help_text="the same in plain words")


class QueuePositionSerializer(serializers.Serializer):
    local_queue = CharField()
    pending_in_local_queue = IntegerField()
    position_in_local_queue = IntegerField(allow_null=True, help_text="from 0, as Kueue counts")
    position_in_cluster_queue = IntegerField(allow_null=True, help_text="from 0, as Kueue counts")


class ApprovalWaitSerializer(serializers.Serializer):
    ahead_in_queue = IntegerField(help_text="requests waiting for approval that were submitted before this one")
    fit_verdict = CharField(help_text="fits_now, fits_after or never: the fit check on its pool now")
    fit_reason = CharField()
    quota_held = serializers.BooleanField(allow_null=True, help_text="false for a request submitted to the portal "
                                          "(nothing is applied before approval); null for a Kueue Workload found in "
                                          "the cluster, whose queue may reserve quota before the portal's check")
    cluster = CharField()
    node_pool = CharField()
    words = CharField(help_text="the same in a sentence")


class WaitSerializer(serializers.Serializer):
    request_id = IntegerField()
    status = CharField()
    waiting = serializers.BooleanField(help_text="waiting for approval, approved, provisioning or stalled: not (fully) "
                                                 "running")
    approval = ApprovalWaitSerializer(allow_null=True, help_text="set while it waits for the platform team's approval")
    checked_at = serializers.DateTimeField(allow_null=True, help_text="when the cluster was last read")
    blockers = WaitBlockerSerializer(many=True)
    unblock = serializers.ListField(child=CharField(), help_text="what would unblock it, in words")
    missing_members = serializers.ListField(child=CharField(), help_text="a stalled gang's members not running")
    queue_position = QueuePositionSerializer(allow_null=True, help_text="Kueue visibility API; null elsewhere")
    estimated_start = serializers.DateTimeField(allow_null=True)
    estimate_basis = CharField(help_text="what the estimate was computed from, or why there is none")
    first_estimate = serializers.DateTimeField(allow_null=True)
    actual_start = serializers.DateTimeField(allow_null=True)
    error_seconds = IntegerField(allow_null=True, help_text="actual start minus the first estimate")
    read_error = CharField(help_text="why the cluster could not be read at the last check")

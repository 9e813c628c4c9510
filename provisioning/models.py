"""GPU catalogue and cluster inventory.

The catalogue (GpuModel, MigProfile) mirrors the shipped data files (`gpu.catalogue`). Clusters and
node pools are what the platform team declares; discovery records what the cluster reports beside it (Node, and
the discovered fields of Cluster and NodePool); MIG plans change node layouts.
"""
from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q

from intake.choices import WorkloadClass
from gpu import gangapi
from gpu.vocabulary import REPLICATED
from portal.encryption import EncryptedTextField
from portal.models import slug_validator
from portal.outbound import validate_api_server_url, validate_outbound_url

from .choices import (
    Strategy,
    JobKind,
    JobStatus,
    KUBERNETES_VERSIONS,
    MIG_PLAN_ACTIVE,
    Applier,
    CredentialSource,
    GangScheduler,
    MigPlanStatus,
    MigStepState,
    MigStrategy,
    NotificationChannel,
    NotificationKind,
    NotificationStatus,
    PoolSource,
    ReconcileStatus,
    SchedulingModel,
    SchedulingModelSeen,
    SharingMode,
    StallEnd,
)
from .manifests.devices import DRA_DRIVER_FEATURE_GATES
from .manifests.network import namespace_problems, pod_label_problems
from .manifests.context import kubernetes_minor

driver_version_validator = RegexValidator(r"^\d{3}(\.\d+){0,2}$", "A driver version such as 570.124.06.")


def dra_feature_gates_validator(value) -> None:
    if not isinstance(value, list) or not all(isinstance(gate, str) for gate in value):
        raise ValidationError('A list of NVIDIA DRA driver feature gate names, e.g. ["TimeSlicingSettings"].')
    unknown = sorted(set(value) - set(DRA_DRIVER_FEATURE_GATES))
    if unknown:
        raise ValidationError(
            f"Unknown NVIDIA DRA driver feature gate(s): {', '.join(unknown)}; known (driver v0.4.1): "
            f"{', '.join(DRA_DRIVER_FEATURE_GATES)}."
        )


def namespace_validator(value: str) -> None:
    if problems := namespace_problems(value):
        raise ValidationError(problems)


def pod_labels_validator(value) -> None:
    if problems := pod_label_problems(value):
        raise ValidationError(problems)


class GpuModel(models.Model):
    key = models.CharField(max_length=40, unique=True)
    product = models.CharField(max_length=100, unique=True, help_text="GFD label nvidia.com/gpu.product")
    dra_product_name = models.CharField(max_length=100)
    family = models.CharField(max_length=40)
    memory_gb = models.PositiveIntegerField()
    mig_total_slices = models.PositiveSmallIntegerField(null=True, blank=True)
    mig_min_driver = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key

    @property
    def mig_capable(self) -> bool:
        return self.mig_total_slices is not None


class MigProfile(models.Model):
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, related_name="mig_profiles")
    name = models.CharField(max_length=40)
    memory_gb = models.PositiveIntegerField()
    compute_slices = models.PositiveSmallIntegerField()
    max_instances = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["gpu_model__key", "compute_slices", "memory_gb", "name"]
        constraints = [
            models.UniqueConstraint(fields=["gpu_model", "name"], name="%(app_label)s_%(class)s_unique_model_name"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_model.key} {self.name}"


class Cluster(models.Model):
    name = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    description = models.CharField(max_length=200, blank=True)
    kubernetes_version = models.CharField(
        max_length=5, choices=[(v, v) for v in KUBERNETES_VERSIONS], default="1.35", help_text="minor version"
    )
    scheduling_model = models.CharField(
        max_length=20, choices=SchedulingModel.choices, default=SchedulingModel.DEVICE_PLUGIN
    )
    gang_scheduler = models.CharField(max_length=20, choices=GangScheduler.choices, default=GangScheduler.NONE)
    applier = models.CharField(max_length=20, choices=Applier.choices, default=Applier.GITOPS)
    api_server = models.URLField(blank=True, validators=[validate_api_server_url])
    gitops_repo = models.CharField(max_length=500, blank=True, help_text="Local path of the GitOps repository")
    # Kueue: the ClusterQueue each team's LocalQueue points at. KAI/Volcano: the parent queue name.
    gang_queue = models.CharField(max_length=63, blank=True)
    dra_feature_gates = models.JSONField(
        default=list, blank=True, validators=[dra_feature_gates_validator],
        help_text='NVIDIA DRA driver feature gates turned on in its Helm values, e.g. ["TimeSlicingSettings"]',
    )
    # Who may reach pods in team namespaces besides the team itself (NetworkPolicies, manifests/network.py).
    ingress_namespace = models.CharField(
        max_length=63, blank=True, validators=[namespace_validator],
        help_text="namespace of the ingress controller, admitted to inference pods' HTTP port; blank: none",
    )
    ingress_pod_labels = models.JSONField(
        default=dict, blank=True, validators=[pod_labels_validator],
        help_text='labels of the ingress controller\'s pods, e.g. {"app.kubernetes.io/name": "ingress-nginx"}; '
                  "empty: every pod of its namespace",
    )
    metrics_namespace = models.CharField(
        max_length=63, blank=True, validators=[namespace_validator],
        help_text="namespace of the metrics scraper (e.g. Prometheus), admitted to every port; blank: none",
    )
    metrics_pod_labels = models.JSONField(
        default=dict, blank=True, validators=[pod_labels_validator],
        help_text="labels of the scraper's pods; empty: every pod of its namespace",
    )
    # Idle GPUs and right-sizing (chargeback/idle/): where the DCGM exporter's metrics can be queried; blank: off.
    prometheus_url = models.URLField(
        blank=True, validators=[validate_outbound_url],
        help_text="Prometheus HTTP API base that scrapes the DCGM exporter, e.g. http://prometheus.monitoring:9090; "
                  "blank: idle GPUs are not looked for on this cluster",
    )
    gang_scheduler_owns_gpu_nodes = models.BooleanField(
        default=True,
        help_text="Volcano or KAI schedules every pod on the GPU nodes, so every pod the portal renders uses it "
        "(two schedulers must not hand out the same GPUs); turn off only if the gang scheduler has GPU nodes of its own",
    )
    dra_mps_support = models.BooleanField(
        default=False,
        help_text="the NVIDIA DRA driver runs with its MPSSupport feature gate (alpha, off by default): DRA pools "
        "may share GPUs through MPS",
    )
    # --- multi-node training: what the platform team turned on (rules in gpu/gangapi.py) ---
    feature_gates = models.JSONField(
        default=list, blank=True, help_text="Kubernetes feature gates turned on, e.g. [\"GenericWorkload\"]"
    )
    jobset_installed = models.BooleanField(
        default=False, help_text="JobSet (jobset.x-k8s.io/v1alpha2) runs here: a failed rank restarts the whole gang"
    )
    gang_topology_key = models.CharField(
        max_length=63, blank=True, help_text="node label a gang is packed into, e.g. nvidia.com/gpu.clique"
    )
    gang_topology_name = models.CharField(
        max_length=63, blank=True, help_text="KAI Topology object or Volcano HyperNode tier defining the domains"
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # --- what inventory discovery last saw; declared fields above are never overwritten ---
    discovered_kubernetes_version = models.CharField(max_length=40, blank=True, help_text="gitVersion, e.g. v1.35.2")
    discovered_gang_schedulers = models.JSONField(
        default=list, blank=True, help_text='installed gang schedulers: [{"backend", "api_group", "versions"}]'
    )
    dra_in_use = models.BooleanField(null=True, blank=True, help_text="GPU ResourceSlices seen; null: never synced")
    dra_device_classes = models.JSONField(
        default=list, blank=True, help_text='DRA DeviceClasses seen: [{"name", "extended_resource_name", "selectors"}]'
    )
    discrepancies = models.JSONField(
        default=list, blank=True, help_text='declared vs discovered: [{"field", "declared", "discovered", "message"}]'
    )
    last_synced_at = models.DateTimeField(null=True, blank=True, help_text="last successful inventory sync")
    last_sync_attempt_at = models.DateTimeField(null=True, blank=True)
    last_sync_error = models.TextField(blank=True, help_text="why the last sync did not happen; empty when it did")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        errors = {}
        gates = self.feature_gates
        if not isinstance(gates, list) or not all(isinstance(g, str) for g in gates):
            errors["feature_gates"] = "A list of feature gate names, e.g. [\"GenericWorkload\"]."
            gates = []
        elif unknown := sorted(set(gates) - set(gangapi.KNOWN_FEATURE_GATES)):
            errors["feature_gates"] = (
                f"Unknown feature gate(s) {', '.join(unknown)}; the portal reads "
                f"{', '.join(gangapi.KNOWN_FEATURE_GATES)}."
            )
        minor = kubernetes_minor(self.kubernetes_version) if self.kubernetes_version in KUBERNETES_VERSIONS else None
        if minor is not None and self.gang_scheduler == GangScheduler.NATIVE:
            refusal = gangapi.native_gang_refusal(minor, gates, self.name or "this cluster")
            if refusal and minor in gangapi.NATIVE_GATES_REQUIRED:
                errors.setdefault("feature_gates", refusal)
        if minor is not None:
            problem = gangapi.topology_refusal(
                self.gang_scheduler, minor, self.gang_topology_key, self.gang_topology_name, gates
            )
            if problem:
                errors.setdefault(problem[0], problem[1])
        for prefix in ("ingress", "metrics"):
            if getattr(self, f"{prefix}_pod_labels") and not getattr(self, f"{prefix}_namespace"):
                errors[f"{prefix}_namespace"] = "Name the namespace the pods with these labels run in."
        if errors:
            raise ValidationError(errors)


class ClusterCredential(models.Model):
    """How the portal authenticates to a cluster. Kept apart from Cluster so no serializer or admin form of Cluster
    can ever show it. Bound to the API server URL it was given for (`server`): once the cluster points elsewhere,
    it is not used until someone sets it again (provisioning.credentials)."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="credential")
    source = models.CharField(max_length=20, choices=CredentialSource.choices, default=CredentialSource.TOKEN)
    server = models.CharField(max_length=500, blank=True, help_text="the API server URL these were confirmed for")
    token = EncryptedTextField(blank=True)
    ca_cert = models.TextField(blank=True, help_text="PEM CA bundle of the API server")
    insecure_skip_tls_verify = models.BooleanField(default=False)
    kubeconfig_path = models.CharField(max_length=500, blank=True)
    kubeconfig_context = models.CharField(max_length=253, blank=True)
    secret_namespace = models.CharField(max_length=63, blank=True)
    secret_name = models.CharField(max_length=253, blank=True)
    secret_key = models.CharField(max_length=253, blank=True, default="token")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"credentials of {self.cluster}"


class NodePool(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=40, validators=[slug_validator])
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="pools")
    node_count = models.PositiveIntegerField(default=1)
    gpus_per_node = models.PositiveSmallIntegerField(default=8, validators=[MinValueValidator(1), MaxValueValidator(16)])
    sharing_mode = models.CharField(max_length=20, choices=SharingMode.choices, default=SharingMode.EXCLUSIVE)
    mig_strategy = models.CharField(max_length=10, choices=MigStrategy.choices, default=MigStrategy.MIXED)
    mig_layout = models.CharField(max_length=63, blank=True, help_text="nvidia.com/mig.config value")
    time_slicing_replicas = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(2), MaxValueValidator(64)],
        help_text="replicas per GPU of a time-sliced or MPS pool",
    )
    time_slicing_renamed = models.BooleanField(
        default=True, help_text="renameByDefault: replicas advertised as nvidia.com/gpu.shared (time-slicing or MPS)"
    )
    device_plugin_config = models.CharField(
        max_length=63, blank=True, help_text="nvidia.com/device-plugin.config value selecting this pool's sharing"
    )
    driver_version = models.CharField(max_length=20, blank=True, validators=[driver_version_validator])
    nvlink_domain = models.CharField(max_length=120, blank=True, help_text="nvidia.com/gpu.clique value, if any")
    node_selector = models.JSONField(default=dict, blank=True, help_text="labels that pick this pool's nodes")
    taints = models.JSONField(default=list, blank=True, help_text="taints on the pool's nodes: [{key, value, effect}]")
    scheduling_model = models.CharField(
        max_length=20, choices=SchedulingModel.choices, blank=True, help_text="blank: the cluster's model"
    )
    source = models.CharField(max_length=20, choices=PoolSource.choices, default=PoolSource.DECLARED)
    # --- discovery ---
    discovered = models.JSONField(
        default=dict, blank=True, help_text="what the pool's nodes offered at the last sync (provisioning.discovery)"
    )
    discrepancies = models.JSONField(
        default=list, blank=True, help_text='declared vs discovered: [{"field", "declared", "discovered", "message"}]'
    )
    discovery_key = models.CharField(max_length=200, blank=True, help_text="grouping key of a discovered pool")
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text="last sync that found nodes in this pool")

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="%(app_label)s_%(class)s_unique_cluster_name"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def effective_scheduling_model(self) -> str:
        return self.scheduling_model or self.cluster.scheduling_model

    @property
    def driver_major(self) -> int | None:
        return int(self.driver_version.split(".")[0]) if self.driver_version else None

    def clean(self):
        errors = {}
        if self.sharing_mode == SharingMode.MIG:
            if not self.mig_layout:
                errors["mig_layout"] = "A MIG pool names its layout (the nvidia.com/mig.config value)."
            elif self.gpu_model_id:
                from gpu.catalogue import load_catalogue

                catalogue = load_catalogue()
                if self.gpu_model.key in catalogue.models and not catalogue.layout_profiles(
                    self.mig_layout, self.gpu_model.key
                ):
                    errors["mig_layout"] = (
                        f"Layout {self.mig_layout!r} creates no MIG devices on {self.gpu_model.key}; "
                        f"choose one of: {', '.join(catalogue.layouts_for(self.gpu_model.key))}."
                    )
        if self.sharing_mode in REPLICATED and not self.time_slicing_replicas:
            kind = "An MPS" if self.sharing_mode == SharingMode.MPS else "A time-sliced"
            errors["time_slicing_replicas"] = f"{kind} pool says how many replicas each GPU is split into."
        if self.sharing_mode not in REPLICATED and self.time_slicing_replicas:
            errors["time_slicing_replicas"] = "Only time-sliced and MPS pools have replicas."
        if (self.sharing_mode == SharingMode.MPS and self.cluster_id and self.effective_scheduling_model == "dra"
                and not self.cluster.dra_mps_support):
            errors["sharing_mode"] = (
                f"{self.cluster.name} does not declare the NVIDIA DRA driver's MPSSupport gate; declare it on the "
                "cluster first, or use the device plugin for this pool.")
        if errors:
            raise ValidationError(errors)


class InventoryGeneration(models.Model):
    """One row whose `generation` changes, in the same transaction, with every write to the tables the decision's
    inventory is read from (clusters, node pools, GPU models): database triggers bump it (migration
    0009_inventory_generation), so the admin, syncs and raw SQL are all covered. Readers key per-process caches of
    the inventory on it (intake.decision_inputs). Values come from a sequence, so a rolled-back bump is never
    reused for other contents."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    generation = models.BigIntegerField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="%(app_label)s_%(class)s_one_row")]

    def __str__(self) -> str:
        return f"inventory generation {self.generation}"


class ProvisioningJob(models.Model):
    """One background operation on a request's Kubernetes objects: its status, attempts and the last message,
    so the admin and the API show failures without anyone reading worker logs."""

    request = models.ForeignKey("intake.GpuRequest", on_delete=models.CASCADE, related_name="provisioning_jobs")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="jobs")
    kind = models.CharField(max_length=10, choices=JobKind.choices)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One apply job and one teardown job per request: retries and redeliveries reuse the row.
            models.UniqueConstraint(fields=["request", "kind"], name="%(app_label)s_%(class)s_one_per_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.request_id}: {self.status}"


class AppliedObject(models.Model):
    """A Kubernetes object the portal created for a request (or its team), as the applier reported it."""

    request = models.ForeignKey(
        "intake.GpuRequest", null=True, blank=True, on_delete=models.CASCADE, related_name="applied_objects"
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="applied_objects")
    api_version = models.CharField(max_length=100)
    kind = models.CharField(max_length=100)
    namespace = models.CharField(max_length=63, blank=True)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    resource_version = models.CharField(max_length=64, blank=True, help_text="or the GitOps commit")
    applied_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "api_version", "kind", "namespace", "name"],
                name="%(app_label)s_%(class)s_unique_object",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


class TeamQuota(models.Model):
    """How many GPU equivalents of one sharing strategy a team may hold at once (approved and running work).
    The portal enforces it exactly at approval; the namespace's ResourceQuota is the cluster-side backstop."""

    team = models.ForeignKey("portal.Team", on_delete=models.CASCADE, related_name="gpu_quotas")
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    gpu_equivalents = models.DecimalField(max_digits=9, decimal_places=3, validators=[MinValueValidator(0)])
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["team__slug", "strategy"]
        constraints = [
            models.UniqueConstraint(fields=["team", "strategy"], name="%(app_label)s_%(class)s_unique_team_strategy"),
        ]

    def __str__(self) -> str:
        return f"{self.team.slug}: {self.gpu_equivalents} {self.strategy}"


# --- status reconciliation and stalled gangs (reconcile) --------------------------------------------------------
# The rules live in provisioning/reconcile/ (pure); the services in provisioning/reconciliation.py.


class GangPolicy(models.Model):
    """How long a gang of one workload class may stay partial (some pods running, others Pending) before its request
    is `stalled`, and how long it may stay stalled before the portal releases it. Edited by the platform team."""

    workload_class = models.CharField(max_length=20, choices=WorkloadClass.choices, unique=True)
    stall_after_seconds = models.PositiveIntegerField(
        validators=[MinValueValidator(60)], help_text="partial gang for this long -> stalled (and notified)"
    )
    release_after_seconds = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(60)],
        help_text="stalled for this long -> objects deleted and request failed; blank: never",
    )  # fmt: skip
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workload_class"]
        verbose_name_plural = "gang policies"

    def __str__(self) -> str:
        return f"{self.workload_class}: stall after {self.stall_after_seconds}s"


class GangStallQuerySet(models.QuerySet):
    def with_burnt(self, at):
        """Annotate `burnt_gpu_seconds`: GPU-equivalent-seconds burnt by the running pods while stalled, up to the
        stall's end or `at` for stalls still open. Exact (numeric), in SQL, for reports."""
        from django.db.models import DecimalField, ExpressionWrapper, F, Value
        from django.db.models.functions import Coalesce, Extract

        seconds = Extract(Coalesce(F("ended_at"), Value(at)) - F("segment_started_at"), "epoch")
        burnt = F("burnt_before_segment") + F("gpu_equivalents_running") * seconds
        return self.annotate(burnt_gpu_seconds=ExpressionWrapper(
            burnt, output_field=DecimalField(max_digits=24, decimal_places=6)))


class GangStall(models.Model):
    """One stall of a request's gang: from when its running pods began waiting for the pending ones to when the
    gang ran whole, finished, failed or was released.

    Burnt GPU-equivalent-seconds = `burnt_before_segment` + `gpu_equivalents_running` x (end - `segment_started_at`).
    A new segment starts whenever the set of running pods changes during the stall, so the figure is exact:
    each stretch is priced with the equivalents that were running during it."""

    request = models.ForeignKey("intake.GpuRequest", on_delete=models.CASCADE, related_name="gang_stalls")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="gang_stalls")
    workload_class = models.CharField(max_length=20)
    started_at = models.DateTimeField(help_text="when the running pods began waiting for the pending ones")
    detected_at = models.DateTimeField(help_text="when the portal declared the request stalled")
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=20, choices=StallEnd.choices, blank=True)
    running_pods = models.PositiveIntegerField()
    pending_pods = models.PositiveIntegerField()
    gpu_equivalents_running = models.DecimalField(max_digits=12, decimal_places=6)
    segment_started_at = models.DateTimeField()
    burnt_before_segment = models.DecimalField(
        max_digits=24, decimal_places=6, default=0, help_text="GPU-equivalent-seconds of the earlier segments"
    )
    pending_detail = models.JSONField(default=list, blank=True, help_text="the pending pods and why, last seen")
    notified_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = GangStallQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request"], condition=Q(ended_at__isnull=True), name="%(app_label)s_%(class)s_one_open"
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True) | Q(ended_at__gte=F("segment_started_at")),
                name="%(app_label)s_%(class)s_ends_after_start",
            ),
        ]
        indexes = [models.Index(fields=["cluster", "ended_at"])]

    def __str__(self) -> str:
        return f"stall of #{self.request_id} from {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def is_open(self) -> bool:
        return self.ended_at is None

    def burnt_gpu_seconds(self, at=None) -> Decimal:
        """The same figure as `with_burnt()`, in Python (exact: Decimal seconds with microseconds)."""
        from django.utils import timezone

        end = self.ended_at or at or timezone.now()
        delta = end - self.segment_started_at
        seconds = Decimal(delta.days * 86400 + delta.seconds) + Decimal(delta.microseconds) / Decimal(1_000_000)
        return Decimal(self.burnt_before_segment) + Decimal(self.gpu_equivalents_running) * seconds

    def burnt_gpu_hours(self, at=None) -> Decimal:
        return (self.burnt_gpu_seconds(at) / Decimal(3600)).quantize(Decimal("0.000001"))

    @property
    def burnt_gpu_seconds_now(self) -> Decimal:
        return self.burnt_gpu_seconds()

    @property
    def burnt_gpu_hours_now(self) -> Decimal:
        return self.burnt_gpu_hours()


class GangNotification(models.Model):
    """One notice about a stall on one channel, with its delivery status (sent once; retried while transient)."""

    stall = models.ForeignKey(GangStall, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=10, choices=NotificationKind.choices)
    channel = models.CharField(max_length=10, choices=NotificationChannel.choices)
    target = models.TextField(help_text="e-mail addresses (comma-separated) or the webhook URL")
    payload = models.JSONField(help_text="what is sent: subject and body, or the webhook's JSON")
    status = models.CharField(max_length=10, choices=NotificationStatus.choices, default=NotificationStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["stall", "kind", "channel"], name="%(app_label)s_%(class)s_once"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} by {self.channel} for #{self.stall.request_id}: {self.status}"


class ClusterReconcileState(models.Model):
    """The status reconciliation of one cluster: where its pod watch stands and how the last run went."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="reconcile_state")
    status = models.CharField(max_length=10, choices=ReconcileStatus.choices, blank=True)
    message = models.TextField(blank=True)
    resource_version = models.CharField(max_length=64, blank=True, help_text="where the next watch resumes")
    listed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pods = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    transitions = models.PositiveIntegerField(default=0, help_text="status changes in the last run")
    events_recorded = models.PositiveIntegerField(default=0, help_text="new request events in the last run")
    watch_events = models.PositiveIntegerField(default=0)
    cycle_ms = models.PositiveIntegerField(default=0, help_text="the last full cycle, in milliseconds")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster__name"]

    def __str__(self) -> str:
        return f"reconciliation of {self.cluster}: {self.status or 'never run'}"


# --- discovered nodes and MIG layout plans --------------------------------


class Node(models.Model):
    """A GPU node as the cluster reported it at the last inventory sync (`provisioning.inventory_sync.inventory_sync`).
    Raw maps (labels, allocatable, capacity, taints) are kept as read; the parsed fields beside them are what the
    portal uses (`provisioning.discovery.parse_node`)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes")
    pool = models.ForeignKey(NodePool, null=True, blank=True, on_delete=models.SET_NULL, related_name="nodes")
    name = models.CharField(max_length=253)
    labels = models.JSONField(default=dict, blank=True)
    allocatable = models.JSONField(default=dict, blank=True)
    capacity = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    unschedulable = models.BooleanField(default=False, help_text="cordoned (spec.unschedulable)")
    gpu_model = models.ForeignKey(GpuModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="nodes")
    gpu_product = models.CharField(max_length=120, blank=True, help_text="nvidia.com/gpu.product or DRA productName")
    gpu_count = models.PositiveSmallIntegerField(default=0, help_text="physical GPUs")
    gpu_memory_mib = models.PositiveIntegerField(null=True, blank=True)
    sharing_mode = models.CharField(max_length=20, choices=SharingMode.choices, blank=True)
    mig_capable = models.BooleanField(default=False)
    mig_strategy = models.CharField(max_length=10, blank=True)
    mig_config = models.CharField(max_length=63, blank=True, help_text="nvidia.com/mig.config")
    mig_config_state = models.CharField(max_length=20, blank=True, help_text="nvidia.com/mig.config.state")
    mig_devices = models.JSONField(default=dict, blank=True, help_text="MIG devices on the node: {profile: count}")
    gpu_replicas = models.PositiveSmallIntegerField(null=True, blank=True, help_text="nvidia.com/gpu.replicas")
    sharing_strategy = models.CharField(max_length=20, blank=True, help_text="nvidia.com/gpu.sharing-strategy")
    driver_version = models.CharField(max_length=20, blank=True)
    driver_major = models.PositiveSmallIntegerField(null=True, blank=True)
    clique = models.CharField(max_length=120, blank=True, help_text="nvidia.com/gpu.clique (NVLink domain)")
    device_plugin_config = models.CharField(max_length=63, blank=True, help_text="nvidia.com/device-plugin.config")
    scheduling_model = models.CharField(max_length=20, choices=SchedulingModelSeen.choices, blank=True)
    dra_devices = models.JSONField(default=list, blank=True, help_text="GPU devices of its ResourceSlices")
    gpu_resources = models.JSONField(default=dict, blank=True, help_text="allocatable GPU resources: {key: count}")
    gpu_used = models.JSONField(default=dict, blank=True, help_text="held by non-terminated pods: {key: count}")
    gpu_pods = models.JSONField(default=list, blank=True, help_text="non-terminated pods holding GPUs here")
    usable = models.BooleanField(default=True, help_text="offers what its pool renders for (mode, naming, model)")
    present = models.BooleanField(default=True, help_text="false: gone from the cluster")
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    gone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="%(app_label)s_%(class)s_unique_cluster_name"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class MigPlan(models.Model):
    """Proposed `nvidia.com/mig.config` changes for one cluster, with their cost; approved by the platform team,
    then executed node by node by the beat-driven `provisioning.mig_plan_advance` task."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="mig_plans")
    status = models.CharField(max_length=10, choices=MigPlanStatus.choices, default=MigPlanStatus.DRAFT)
    summary = models.TextField(blank=True)
    demand = models.JSONField(default=list, blank=True, help_text="the unmet MIG demand the plan addresses")
    unmet = models.JSONField(default=list, blank=True, help_text="demand no layout change can meet, and why")
    drain_timeout_seconds = models.PositiveIntegerField(
        default=3600, help_text="how long a cordoned node waits for its GPU pods before the label is set anyway"
    )
    reconfigure_timeout_seconds = models.PositiveIntegerField(
        default=900, help_text="how long mig-manager may take before the step is reported stuck"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One plan at a time changes a cluster's layouts.
            models.UniqueConstraint(
                fields=["cluster"],
                condition=models.Q(status__in=sorted(MIG_PLAN_ACTIVE)),
                name="%(app_label)s_%(class)s_one_active_per_cluster",
            ),
        ]

    def __str__(self) -> str:
        return f"MIG plan #{self.pk} for {self.cluster.name} ({self.status})"


class MigPlanStep(models.Model):
    """One node's layout change: its cost estimate, the workloads it interrupts, and its execution (every state
    change is appended to `log`)."""

    plan = models.ForeignKey(MigPlan, on_delete=models.CASCADE, related_name="steps")
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.SET_NULL, related_name="mig_steps")
    node_name = models.CharField(max_length=253)
    position = models.PositiveSmallIntegerField()
    from_config = models.CharField(max_length=63, blank=True)
    to_config = models.CharField(max_length=63)
    gpu_count = models.PositiveSmallIntegerField(default=0)
    gains = models.JSONField(default=dict, blank=True, help_text="MIG devices per profile after minus before")
    estimated_seconds_min = models.PositiveIntegerField(default=0)
    estimated_seconds_max = models.PositiveIntegerField(default=0)
    remaining_work_seconds = models.PositiveIntegerField(default=0)
    remaining_work_known = models.BooleanField(default=True, help_text="false: a running workload has no end")
    affected_workloads = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=20, choices=MigStepState.choices, default=MigStepState.PENDING)
    message = models.TextField(blank=True)
    log = models.JSONField(default=list, blank=True, help_text='[{"at", "from", "to", "message"}]')
    cordoned_by_portal = models.BooleanField(default=False, help_text="only a node the portal cordoned is uncordoned")
    drain_deadline_at = models.DateTimeField(null=True, blank=True)
    reconfigure_deadline_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan", "position"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "position"], name="%(app_label)s_%(class)s_unique_position"),
            models.UniqueConstraint(fields=["plan", "node_name"], name="%(app_label)s_%(class)s_one_per_node"),
        ]

    def __str__(self) -> str:
        return f"{self.node_name}: {self.from_config or '-'} -> {self.to_config} ({self.state})"


# --- why a request waits (waits) ------------------------------------------------------------------------------
# Computed by provisioning.waits from the cluster's scheduler objects; read by the request page and API.


class RequestWait(models.Model):
    """The last reading of why an approved request is not (fully) running, and the start estimate's record: the
    first estimate given, and the actual start once its pods run, so the estimate's error can be tracked."""

    request = models.OneToOneField("intake.GpuRequest", on_delete=models.CASCADE, related_name="wait")
    checked_at = models.DateTimeField()
    waiting = models.BooleanField(default=True)
    blockers = models.JSONField(default=list, blank=True, help_text="[{kind, source, reason, message, words}]")
    unblock = models.JSONField(default=list, blank=True, help_text="what would unblock it, in words")
    missing_members = models.JSONField(default=list, blank=True, help_text="a stalled gang's absent members")
    queue_position = models.JSONField(null=True, blank=True, help_text="Kueue visibility API positions")
    estimated_start = models.DateTimeField(null=True, blank=True)
    estimate_basis = models.TextField(blank=True)
    first_estimate = models.DateTimeField(null=True, blank=True)
    first_estimated_at = models.DateTimeField(null=True, blank=True)
    actual_start = models.DateTimeField(null=True, blank=True)
    error_seconds = models.IntegerField(null=True, blank=True, help_text="actual start minus the first estimate")
    read_error = models.TextField(blank=True, help_text="why the cluster could not be read at the last check")

    class Meta:
        ordering = ["request_id"]

    def __str__(self) -> str:
        return f"wait of request #{self.request_id}"


class AdmissionWorkload(models.Model):
    """A Kueue Workload whose `gpu-portal-approval` admission check the portal decides, keyed by its uid: a restart
    (or a second controller run) finds the row and never creates a second request or decides twice."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="admission_workloads")
    uid = models.CharField(max_length=64)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    owner_kind = models.CharField(max_length=63, blank=True)
    owner_name = models.CharField(max_length=253, blank=True)
    request = models.ForeignKey(
        "intake.GpuRequest", null=True, blank=True, on_delete=models.SET_NULL, related_name="admission_workloads",
        help_text="blank: the portal could not make a request of it (and rejected it, saying why)",
    )
    state = models.CharField(max_length=10, blank=True, help_text="the check state last written: Pending, Ready, Rejected")
    message = models.TextField(blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster", "namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "uid"], name="%(app_label)s_%(class)s_unique_uid"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}: {self.namespace}/{self.name} ({self.state or 'undecided'})"

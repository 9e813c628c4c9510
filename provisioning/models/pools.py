"""Node pools (declared or discovered), the GPU nodes discovery found, and the inventory's generation counter."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from gpu.catalogue import load_catalogue
from gpu.vocabulary import REPLICATED
from portal.models import slug_validator

from ..choices import MigStrategy, PoolSource, SchedulingModel, SchedulingModelSeen, SharingMode
from .catalogue import GpuModel
from .clusters import Cluster
from .validators import driver_version_validator


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
    # Only mig-manager writes nvidia.com/mig.config.state (mig-parted reconfigure-mig.sh); statically or cloud-configured
    # MIG nodes never carry it, so pods may require it only where mig-manager runs.
    mig_readiness_label = models.BooleanField(
        null=True, blank=True, verbose_name="MIG readiness label",
        help_text="do mig-manager's nvidia.com/mig.config.state labels mark this pool's MIG nodes ready? "
                  "unknown: as discovery saw the nodes",
    )
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
    the inventory on it (intake.decision_cache). Values come from a sequence, so a rolled-back bump is never
    reused for other contents."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    generation = models.BigIntegerField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="%(app_label)s_%(class)s_one_row")]

    def __str__(self) -> str:
        return f"inventory generation {self.generation}"


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

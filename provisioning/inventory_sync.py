"""Inventory sync: read one cluster (nodes, DRA ResourceSlices and claims, non-terminated GPU pods, API discovery
and /version), turn what it read into facts with the pure functions of `provisioning.discovery`, and write them in
one transaction: Node rows, discovered NodePool rows, and on declared pools only `discovered`, `discrepancies` and
`last_seen_at` - never a declared value. Idempotent: a second run with the same cluster state writes the same rows.
Clusters without an API server (GitOps targets) are skipped with a note."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from intake.choices import REQUEST_TERMINAL
from intake.models import GpuRequest
from portal.dispatch import send_now, send_on_commit

from gpu.catalogue import load_catalogue
from gpu.pools import PoolSpec
from portal.errors import PermissionDenied
from portal.roles import is_platform

from . import discovery, renderability
from .choices import PoolSource, SchedulingModel
from .contract import POOL, domain_key
from .kube import inventory_reads
from .kube.client import KubeClient
from .kube.connection import cluster_connection
from .kube.errors import KubeError, TransientKubeError
from .kube.reads import server_version
from .models import Cluster, GpuModel, Node, NodePool
from .selectors.clusters import no_api_server_note

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterObservation:
    """Everything one sync read from a cluster, as plain data."""

    git_version: str
    gang_schedulers: list[dict]
    nodes: list[dict]
    slices: list[dict] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)
    device_classes: list[dict] = field(default_factory=list)
    admission_policies: bool = False  # admissionregistration.k8s.io/v1 validatingadmissionpolicies served


@dataclass(frozen=True)
class SyncOutcome:
    cluster: str
    status: str  # synced | skipped | failed
    message: str = ""
    nodes: int = 0
    pools: int = 0
    transient: bool = False


def inventory_observe(*, cluster: Cluster) -> ClusterObservation:
    """Read the cluster (no database writes). Raises KubeError."""
    with KubeClient(cluster_connection(cluster)) as kube:
        git_version = server_version(kube)
        groups = inventory_reads.served_group_versions(kube)
        gang = [g.as_dict() for g in inventory_reads.installed_gang_schedulers(kube, groups)]
        nodes = inventory_reads.list_all_nodes(kube)
        dra = "v1" in groups.get("resource.k8s.io", [])
        slices = inventory_reads.list_resource_slices(kube) if dra else []
        claims = inventory_reads.list_resource_claims(kube) if slices else []
        classes = inventory_reads.list_device_classes(kube) if dra else []
        pods = list(inventory_reads.iter_gpu_pods(inventory_reads.list_active_pods(kube)))
        policies = inventory_reads.serves_admission_policies(kube, groups)
    return ClusterObservation(git_version=git_version, gang_schedulers=gang, nodes=nodes, slices=slices,
                              claims=claims, pods=pods, device_classes=classes, admission_policies=policies)


def inventory_sync(*, cluster: Cluster) -> SyncOutcome:
    """Discover one cluster's inventory and record it; a failure is recorded on the cluster, never raised."""
    note = no_api_server_note(cluster)
    if note:
        Cluster.objects.filter(pk=cluster.pk).update(last_sync_attempt_at=timezone.now(), last_sync_error=note)
        return SyncOutcome(cluster=cluster.name, status="skipped", message=note)
    try:
        observation = inventory_observe(cluster=cluster)
    except KubeError as exc:
        message = f"Inventory sync failed{' (will retry at the next sync)' if isinstance(exc, TransientKubeError) else ''}: {exc}"
        Cluster.objects.filter(pk=cluster.pk).update(last_sync_attempt_at=timezone.now(), last_sync_error=message)
        logger.warning("inventory sync of %s failed: %s", cluster.name, exc)
        return SyncOutcome(cluster=cluster.name, status="failed", message=message,
                           transient=isinstance(exc, TransientKubeError))
    return inventory_record(cluster_id=cluster.pk, observation=observation)


def _declared(pool: NodePool) -> PoolSpec:
    return PoolSpec(
        name=pool.name, gpu_model=pool.gpu_model.key, node_count=pool.node_count, gpus_per_node=pool.gpus_per_node,
        sharing_mode=pool.sharing_mode, mig_strategy=pool.mig_strategy, mig_layout=pool.mig_layout,
        time_slicing_replicas=pool.time_slicing_replicas, time_slicing_renamed=pool.time_slicing_renamed,
        device_plugin_config=pool.device_plugin_config, driver_version=pool.driver_version,
        nvlink_domain=pool.nvlink_domain, node_selector=dict(pool.node_selector or {}),
        scheduling_model=pool.effective_scheduling_model,
    )  # fmt: skip


def _check_rendering(cluster, row: NodePool, spec, nodes, catalogue) -> None:
    """A pool the renderer cannot place pods on is flagged and offers nothing (provisioning.renderability)."""
    row.cluster = cluster
    found = renderability.pool_render_discrepancies(cluster=cluster, pool=row, spec=spec, nodes=nodes,
                                                    catalogue=catalogue)
    if found:
        row.discrepancies = [*row.discrepancies, *found]
        row.discovered = {**row.discovered, "usable_node_count": 0, "schedulable_node_count": 0}


def _node_row_values(facts: discovery.NodeFacts, *, usable: bool, used: dict, pods: list, models: dict) -> dict:
    return {
        "labels": facts.labels, "allocatable": facts.allocatable, "capacity": facts.capacity,
        "taints": list(facts.taints), "unschedulable": facts.unschedulable,
        "gpu_model": models.get(facts.gpu_model), "gpu_product": facts.gpu_product[:120],
        "gpu_count": facts.gpu_count, "gpu_memory_mib": facts.gpu_memory_mib, "sharing_mode": facts.sharing_mode,
        "mig_capable": facts.mig_capable, "mig_strategy": facts.mig_strategy, "mig_config": facts.mig_config,
        "mig_config_state": facts.mig_config_state, "mig_devices": facts.mig_devices,
        "gpu_replicas": facts.gpu_replicas, "sharing_strategy": facts.sharing_strategy,
        "driver_version": facts.driver_version, "driver_major": facts.driver_major, "clique": facts.clique,
        "device_plugin_config": facts.device_plugin_config, "scheduling_model": facts.scheduling_model,
        "dra_devices": list(facts.dra_devices), "gpu_resources": facts.gpu_resources, "gpu_used": used,
        "gpu_pods": pods, "usable": usable, "present": True, "gone_at": None,
    }  # fmt: skip


NODE_UPDATE_FIELDS = [
    "pool", "labels", "allocatable", "capacity", "taints", "unschedulable", "gpu_model", "gpu_product", "gpu_count",
    "gpu_memory_mib", "sharing_mode", "mig_capable", "mig_strategy", "mig_config", "mig_config_state", "mig_devices",
    "gpu_replicas", "sharing_strategy", "driver_version", "driver_major", "clique", "device_plugin_config",
    "scheduling_model", "dra_devices", "gpu_resources", "gpu_used", "gpu_pods", "usable", "present", "gone_at",
    "last_seen_at",
]


@transaction.atomic
def inventory_record(*, cluster_id: int, observation: ClusterObservation) -> SyncOutcome:
    """Write what one sync observed (one transaction; the cluster row is locked so syncs never interleave)."""
    cluster = Cluster.objects.select_for_update(no_key=True).get(pk=cluster_id)
    catalogue = load_catalogue()
    now = timezone.now()
    pool_label = domain_key(settings.PORTAL_LABEL_DOMAIN, POOL)
    models = {m.key: m for m in GpuModel.objects.all()}

    devices = discovery.dra_devices_by_node(observation.slices)
    facts = [discovery.parse_node(n, catalogue=catalogue, dra_devices=devices.get(n["metadata"]["name"], ()),
                                  pool_label=pool_label) for n in observation.nodes]
    gpu_facts = [f for f in facts if f.is_gpu_node]
    pods = discovery.parse_pods(observation.pods, claims=observation.claims,
                                dra_device_keys=discovery.dra_device_keys(devices),
                                label_domain=settings.PORTAL_LABEL_DOMAIN)
    used: dict[str, dict[str, int]] = {}
    held: dict[str, list[dict]] = {}
    for pod in pods:
        if not pod.node:
            continue
        for key, count in pod.resources.items():
            used.setdefault(pod.node, {})[key] = used.get(pod.node, {}).get(key, 0) + count
        held.setdefault(pod.node, []).append(pod.as_dict())

    declared_rows = list(cluster.pools.filter(source=PoolSource.DECLARED).select_related("gpu_model"))
    declared = {p.name: _declared(p) for p in declared_rows}
    grouping = discovery.group_nodes(gpu_facts, list(declared.values()), pool_label=pool_label)

    pool_of_node: dict[str, NodePool] = {}
    usable_of_node: dict[str, bool] = {}
    for row in declared_rows:
        spec, members = declared[row.name], grouping.declared.get(row.name, [])
        row.discovered = discovery.summarise_pool(spec, members, catalogue)
        row.discrepancies = discovery.pool_discrepancies(spec, members, catalogue, grouping.overlaps.get(row.name, ()))
        _check_rendering(cluster, row, spec, members, catalogue)
        if members:
            row.last_seen_at = now
        row.save(update_fields=["discovered", "discrepancies", "last_seen_at"])
        for member in members:
            pool_of_node[member.name], usable_of_node[member.name] = row, discovery.usable_for(spec, member)

    existing = {p.discovery_key: p for p in cluster.pools.filter(source=PoolSource.DISCOVERED)}
    current_keys = {g.key for g in grouping.discovered}
    # A row whose group is gone may be taken over by a new group of the same name (its key changed).
    reusable = {p.name: p for key, p in existing.items() if key not in current_keys}
    seen_keys = set()
    unpooled = list(grouping.unpooled)
    for group in grouping.discovered:
        if group.gpu_model not in models:  # the catalogue is newer than the database: `manage.py sync_catalogue`
            unpooled.extend(group.nodes)
            continue
        spec = discovery.as_declared(group)
        row = existing.get(group.key) or reusable.pop(group.name, None) or NodePool(
            cluster=cluster, source=PoolSource.DISCOVERED)
        existing.pop(row.discovery_key, None)
        row.discovery_key = group.key
        row.name, row.gpu_model = group.name, models[group.gpu_model]
        row.node_count, row.gpus_per_node = spec.node_count, min(max(spec.gpus_per_node, 1), 16)
        row.sharing_mode, row.mig_strategy, row.mig_layout = group.sharing_mode, group.mig_strategy, group.mig_layout
        row.time_slicing_replicas = group.time_slicing_replicas
        row.time_slicing_renamed, row.device_plugin_config = group.time_slicing_renamed, group.device_plugin_config
        row.node_selector, row.taints = dict(group.node_selector), list(group.taints)
        row.scheduling_model = "" if group.scheduling_model == cluster.scheduling_model else group.scheduling_model
        row.discovered = discovery.summarise_pool(spec, group.nodes, catalogue)
        row.driver_version = row.discovered["min_driver_version"]
        row.nvlink_domain = row.discovered["nvlink_domain"]
        row.discrepancies = [d for d in discovery.pool_discrepancies(spec, group.nodes, catalogue)
                             if d["field"] in ("scheduling_model", "mig_config_state", "placement")]
        _check_rendering(cluster, row, spec, group.nodes, catalogue)
        row.last_seen_at = now
        row.save()
        seen_keys.add(group.key)
        for member in group.nodes:
            pool_of_node[member.name], usable_of_node[member.name] = row, discovery.usable_for(spec, member)

    # Discovered pools whose nodes are gone: deleted unless a live request was placed on them.
    live_names = set(
        GpuRequest.objects.exclude(status__in=REQUEST_TERMINAL).filter(decision__cluster=cluster.name)
        .values_list("decision__node_pool", flat=True)
    )
    for key, row in existing.items():
        if key in seen_keys or row.pk is None:
            continue
        if row.name in live_names:
            row.node_count, row.discovered = 0, discovery.summarise_pool(_declared(row), [], catalogue)
            row.discrepancies = [{"field": "node_count", "declared": None, "discovered": 0,
                                  "message": f"No node of {row.name} is left; live requests were placed on it."}]
            row.save(update_fields=["node_count", "discovered", "discrepancies"])
        else:
            row.delete()

    Node.objects.bulk_create(
        [
            Node(cluster=cluster, name=f.name, pool=pool_of_node.get(f.name), first_seen_at=now, last_seen_at=now,
                 **_node_row_values(f, usable=usable_of_node.get(f.name, False), used=used.get(f.name, {}),
                                    pods=held.get(f.name, []), models=models))
            for f in gpu_facts
        ],
        update_conflicts=True,
        unique_fields=["cluster", "name"],
        update_fields=NODE_UPDATE_FIELDS,
    )
    seen = {f.name for f in gpu_facts}
    cluster.nodes.filter(present=True).exclude(name__in=seen).update(present=False, gone_at=now, gpu_used={},
                                                                     gpu_pods=[])

    installed = [g["backend"] for g in observation.gang_schedulers]
    dra_in_use = any(d for d in devices.values())
    cluster.discovered_kubernetes_version = observation.git_version
    cluster.discovered_gang_schedulers = observation.gang_schedulers
    cluster.dra_in_use = dra_in_use
    cluster.serves_admission_policies = observation.admission_policies
    cluster.dra_device_classes = discovery.device_classes(observation.device_classes)
    cluster.discrepancies = discovery.cluster_discrepancies(
        declared_version=cluster.kubernetes_version, discovered_version=observation.git_version,
        declared_gang=cluster.gang_scheduler, installed_gang=installed,
        declared_scheduling=cluster.scheduling_model or SchedulingModel.DEVICE_PLUGIN, dra_in_use=dra_in_use,
        unpooled=unpooled, catalogue=catalogue,
    )  # fmt: skip
    cluster.last_synced_at = cluster.last_sync_attempt_at = now
    cluster.last_sync_error = ""
    cluster.save(update_fields=["discovered_kubernetes_version", "discovered_gang_schedulers", "dra_in_use",
                                "serves_admission_policies",
                                "dra_device_classes",
                                "discrepancies", "last_synced_at", "last_sync_attempt_at", "last_sync_error"])
    pools = len(declared_rows) + len(seen_keys)
    return SyncOutcome(cluster=cluster.name, status="synced", nodes=len(gpu_facts), pools=pools,
                       message=f"{len(gpu_facts)} GPU nodes in {pools} pools, {len(pods)} GPU pods.")


def inventory_sync_dispatch() -> int:
    """Beat: one inventory_sync task per enabled cluster (GitOps clusters too: the task records why it skips)."""
    sent = 0
    for cluster_id in Cluster.objects.filter(enabled=True).order_by("name").values_list("id", flat=True):
        sent += send_now("provisioning.inventory_sync", cluster_id, what=f"the inventory sync of cluster {cluster_id}")
    return sent


def inventory_sync_request(*, user, cluster: Cluster) -> str:
    """Ask for a sync of one cluster now (platform team); the task runs after this transaction commits."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team starts an inventory sync.")
    note = no_api_server_note(cluster)
    send_on_commit("provisioning.inventory_sync", cluster.pk, what=f"the inventory sync of {cluster.name}")
    return note or f"Sync of {cluster.name} queued; GET the cluster to see the result."

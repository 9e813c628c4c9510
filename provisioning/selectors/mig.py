"""The MIG planner's inputs for one synced cluster, read from the requests and the last inventory sync."""
from __future__ import annotations

import datetime

from gpu.catalogue import load_catalogue
from intake.models import GpuRequest

from .. import discovery
from ..choices import SharingMode, Strategy
from ..mig_planner import MigDemand, MigNode, Workload
from ..models import Cluster, Node
from .holders import holder_key, request_owners, running_holders


def mig_planner_inputs(*, cluster: Cluster, now: datetime.datetime) -> tuple[list, list]:
    """The MIG planner's inputs for one synced cluster: the devices pending and approved MIG requests ask for, per
    pool, and the pools' MIG nodes with the workloads a layout change would interrupt."""
    catalogue = load_catalogue()
    demand = [
        MigDemand(
            request_id=r.pk, label=f"#{r.pk} {r.team.slug}/{r.name} ({r.status})", pool=r.decision.node_pool,
            gpu_model=r.decision.gpu_model, profile=r.decision.mig_profile,
            devices=int(r.decision.gpus_per_replica) * int(r.decision.replicas),
        )
        for r in GpuRequest.objects.filter(status__in=("pending_approval", "approved"), strategy=Strategy.MIG,
                                           decision__cluster=cluster.name).select_related("team").order_by("id")
        if r.decision.mig_profile
    ]  # fmt: skip
    nodes = list(
        Node.objects.filter(cluster=cluster, present=True, pool__isnull=False, sharing_mode=SharingMode.MIG,
                            gpu_model__isnull=False).select_related("pool", "gpu_model").order_by("name")
    )
    holders = {h.key: h for h in running_holders(nodes, exclude_request_id=None)}
    owners = request_owners([h.request_id for h in holders.values() if h.request_id])
    mig_nodes = []
    for node in nodes:
        model = catalogue.models.get(node.gpu_model.key)
        used: dict[str, int] = {}
        for key, count in (node.gpu_used or {}).items():
            profile = discovery.key_profile(key, model) or (
                next(iter(node.mig_devices or {}), None) if key == discovery.GPU else None)
            if profile:
                used[profile] = used.get(profile, 0) + count
        workloads = []
        for holder in holders.values():
            if node.name not in holder.held:
                continue
            remaining = int((holder.expected_end - now).total_seconds()) if holder.expected_end else None
            workloads.append(Workload(
                label=holder.label, request_id=holder.request_id, team=holder.team,
                owner=owners.get(holder.request_id, ""), pods=sum(1 for p in node.gpu_pods or []
                                                                  if holder_key(p) == holder.key),
                remaining_seconds=max(remaining, 0) if remaining is not None else None,
            ))  # fmt: skip
        mig_nodes.append(MigNode(
            name=node.name, pool=node.pool.name, gpu_model=node.gpu_model.key, gpu_count=node.gpu_count,
            mig_config=node.mig_config, offered=dict(node.mig_devices or {}), used=used,
            mig_strategy=node.mig_strategy or "mixed", schedulable=not node.unschedulable,
            config_state=node.mig_config_state, workloads=tuple(workloads),
        ))  # fmt: skip
    return demand, mig_nodes

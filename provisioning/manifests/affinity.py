"""Pod affinity for fabric isolation (reference §9), the driver floor by node label (reference §10) and MIG readiness (§11).

MIG readiness: a pod that needs MIG devices (device plugin) on a pool mig-manager configures requires
`nvidia.com/mig.config.state=success`, the label mig-manager sets once the node's layout is applied
(NVIDIA/mig-parted v0.15.0 `deployments/container/reconfigure-mig.sh`): while it reads pending or rebooting the
device plugin is paused and the advertised slices are about to change, and a `failed` layout may not be the one
the pod was rendered for. Only mig-manager writes the label, so statically or cloud-configured MIG nodes never
carry it: the requirement is a per-pool fact (`pool.mig_ready_label`, declared or seen on every node at the last
sync), added only where it is True. DRA pods are left out: the driver's ResourceSlices list only the MIG devices
that exist, and DRA nodes need not run mig-manager.
"""

from __future__ import annotations

from gpu.vocabulary import DRA, MIG

from ..contract import TEAM, domain_key
from .context import RenderContext
from .errors import RenderError
from .labels import selector_for_request
from .nvlink import compute_domain_needed

CLIQUE_LABEL = "nvidia.com/gpu.clique"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DRIVER_MAJOR_LABEL = "nvidia.com/cuda.driver-version.major"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
FABRIC_ISOLATIONS = ("shared", "tenant_exclusive")


def node_requirements(ctx: RenderContext) -> list[dict]:
    """matchExpressions that must all hold on the node (they go into one nodeSelectorTerm: terms are ORed)."""
    request, pool = ctx.request, ctx.cluster.pool
    expressions = []
    if request.strategy == MIG and ctx.cluster.scheduling_model != DRA and pool.mig_ready_label is True:
        expressions.append({"key": MIG_CONFIG_STATE_LABEL, "operator": "In", "values": ["success"]})
    if (request.fabric_isolation == "tenant_exclusive" and pool.nvlink_domain) or compute_domain_needed(ctx):
        # A node without the clique label never falls in an anti-affinity domain, so it must be excluded.
        expressions.append({"key": CLIQUE_LABEL, "operator": "Exists"})
    if request.driver_min_major:
        if int(request.driver_min_major) < 1:
            raise RenderError(f"Driver floor {request.driver_min_major} is not a driver major version.")
    if request.driver_min_major and driver_floor_by_label(ctx):
        # Gt compares integers; "at least N" is "greater than N-1".
        expressions.append(
            {"key": DRIVER_MAJOR_LABEL, "operator": "Gt", "values": [str(int(request.driver_min_major) - 1)]}
        )
    if request.driver_branch and driver_floor_by_label(ctx):
        expressions.append({"key": DRIVER_MAJOR_LABEL, "operator": "In", "values": [str(int(request.driver_branch))]})
    return expressions


def driver_floor_by_label(ctx: RenderContext) -> bool:
    """Device plugin pods pin the floor on GFD's label (the device plugin ships GFD). On DRA the claim's CEL selector
    on `driverVersion` is the constraint (devices.py); the label is added only where discovery saw it on every node
    of the pool: DRA-only nodes may carry no GFD label at all, and a required label they lack matches no node."""
    if ctx.cluster.scheduling_model != DRA:
        return True
    return ctx.cluster.pool.driver_major_label is True


def build_tenant_anti_affinity(ctx: RenderContext) -> dict:
    """Keep every other team's GPU pods out of this pod's NVLink domain (or node, off-fabric).

    `Exists` matters: `NotIn` alone also matches pods without the team label (DaemonSets, system pods), which
    would make every node look occupied by "another tenant".
    """
    team_key = domain_key(ctx.domain, TEAM)
    topology_key = CLIQUE_LABEL if ctx.cluster.pool.nvlink_domain else HOSTNAME_LABEL
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": topology_key,
                "namespaceSelector": {},
                "labelSelector": {
                    "matchExpressions": [
                        {"key": team_key, "operator": "Exists"},
                        {"key": team_key, "operator": "NotIn", "values": [ctx.labels[team_key]]},
                    ]
                },
            }
        ]
    }


def build_affinity(ctx: RenderContext) -> dict | None:
    if ctx.request.fabric_isolation not in FABRIC_ISOLATIONS:
        raise RenderError(
            f"Unknown fabric isolation {ctx.request.fabric_isolation!r}; "
            f"expected one of {', '.join(FABRIC_ISOLATIONS)}."
        )
    affinity = {}
    expressions = node_requirements(ctx)
    if expressions:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
        }
    if compute_domain_needed(ctx) and ctx.request.replicas > 1:
        # One ComputeDomain cannot span NVLink domains: all pods of the request share one clique.
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": CLIQUE_LABEL,
                    "labelSelector": {"matchLabels": selector_for_request(ctx.request.request_id, ctx.domain)},
                }
            ]
        }
    if ctx.request.fabric_isolation == "tenant_exclusive":
        affinity["podAntiAffinity"] = build_tenant_anti_affinity(ctx)
    return affinity or None

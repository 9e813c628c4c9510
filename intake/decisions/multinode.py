"""The multi-node part of a decision: how a gang fails and restarts, where it is packed, and whether it gets a
ComputeDomain (reasons included). Pure; the renderer derives the same from the cluster's settings, both through
`gpu/gangapi.py`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from gpu import gangapi

from ..words import GANG_BACKEND_WORDS
from .decision import MultiNode

if TYPE_CHECKING:
    from .inputs import ClusterSpec, Inventory, PoolSpec
    from .reasons import Reasons


def multi_node_decision(cluster: ClusterSpec, pool: PoolSpec, inventory: Inventory, *, needs_gang: bool,
                        fabric_isolation: str, reasons: Reasons) -> MultiNode | None:
    """How a multi-pod job fails, where it is packed, and whether it gets a ComputeDomain; with the reasons.
    The renderer derives the same from the cluster's settings (gpu/gangapi.py)."""
    multinode_nvlink = inventory.catalogue.model(pool.gpu_model).multinode_nvlink and bool(pool.nvlink_domain)
    compute_domain = multinode_nvlink and (needs_gang or fabric_isolation == "tenant_exclusive")
    if not needs_gang and not compute_domain:
        return None
    restart, topology = None, None
    if needs_gang:
        if cluster.jobset:
            restart = gangapi.RESTART_JOBSET
            reasons.add("restart", f"A failed rank restarts the whole gang: {cluster.name} runs JobSet, whose "
                                   "failurePolicy recreates every rank together (up to 3 times), so no rank waits "
                                   "in a collective for a peer that is gone.", source="cluster")
        else:
            restart = gangapi.RESTART_FAIL_JOB
            reasons.add("restart", f"A failed rank fails the whole Job at once: {cluster.name} has no JobSet, and a "
                                   "Kubernetes Job can only restart the one failed pod, which would leave the other "
                                   "ranks holding GPUs while they wait for it. Resubmit after a failure, or ask the "
                                   "platform team for JobSet.", source="cluster")
        key, name = cluster.gang_topology_key, cluster.gang_topology_name
        refusal = gangapi.topology_refusal(cluster.gang_scheduler, cluster.minor, key, name, cluster.feature_gates,
                                           dra=pool.scheduling_model == "dra")
        if (key or name) and not refusal:
            topology = key or name
            words = gangapi.topology_words(cluster.gang_scheduler, key, name)
            reasons.add("topology", f"The gang is packed into one domain: {words}, as the platform team set for "
                                    f"{cluster.name}.", source="cluster")
        else:
            backend = GANG_BACKEND_WORDS.get(cluster.gang_scheduler, cluster.gang_scheduler)
            why = (f"its topology is not used here: {refusal[1]}" if refusal else
                   f"{cluster.name} declares no gang topology that {backend} can honour")
            reasons.add("topology", f"The gang is not packed into one NVLink domain or rack by the scheduler: "
                                    f"{why}.", source="cluster")
    may_stall = False
    if compute_domain:
        why = ("its pods span nodes of one NVLink domain" if needs_gang
               else "tenant-exclusive fabric isolation gives your team its own IMEX domain")
        text = (f"{pool.gpu_model} NVLink reaches across nodes, and {why}: the request gets a ComputeDomain of its "
                "own (IMEX channel per pod) and stays inside one nvidia.com/gpu.clique.")
        # Required pod affinity on the clique follows the first pod wherever it lands, and reserves nothing for the
        # others: without a topology-aware gang the rest may find that clique full and wait there.
        may_stall = needs_gang and topology is None
        if may_stall:
            text += (f" Warning: placement can stall. {cluster.name} has no topology-aware gang for multi-node NVLink "
                     "(KAI topology, Volcano HyperNode, the native topology on 1.37, Kueue TAS on device-plugin "
                     "pools), so the first pod may land in any clique and nothing holds room there for the others; "
                     "they wait until that clique frees up. Ask the platform team to declare the gang topology.")
        reasons.add("compute_domain", text, source="cluster")
    return MultiNode(restart=restart, topology=topology, compute_domain=compute_domain, placement_may_stall=may_stall)

"""Can the renderer place pods on a pool's nodes? Checked at inventory sync, so a pool whose labels contradict what
the renderer pins (a `-SHARED` product on a MIG `single` pool whose slices are time-sliced, a `-MIG-INVALID`
product) is a discrepancy the platform team sees, and is offered to
nobody, instead of an engineer's preview failing with a 400.

The check renders, with the renderer's own inputs (`selectors.cluster_profile`) and its own placement function,
one probe request per strategy and MIG profile the pool offers, and asks whether any node that serves the pool
carries every node label the pods would select. Reads no database row beyond the ones passed in.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu.catalogue import Catalogue
from gpu.pools import PoolSpec
from gpu.vocabulary import MIG, STRATEGY_FOR_SHARING_MODE

from . import discovery
from .manifests.context import make_context
from .manifests.devices import gpu_placement
from .manifests.errors import RenderError
from .manifests.spec import RequestSpec
from .selectors import cluster_profile

FIELD = "rendering"


def _probe(*, pool, strategy: str, profile: str | None, model) -> RequestSpec:
    return RequestSpec(
        request_id=1, name="placement-check", team="placement-check", cost_center="", workload_class="development",
        image="placement-check", command=(), replicas=1, gpus_per_replica=1, gpu_memory_gb=1.0, strategy=strategy,
        gpu_model=model.key, gpu_product=model.product, dra_product_name=model.dra_product_name, mig_profile=profile,
        fabric_isolation="shared", gang=None, driver_min_major=None, gpu_equivalents_per_replica="1",
    )  # fmt: skip


def pool_render_discrepancies(*, cluster, pool, spec: PoolSpec, nodes: Sequence[discovery.NodeFacts],
                              catalogue: Catalogue) -> list[dict[str, Any]]:
    """Why pods rendered for this pool (a NodePool row with `discovered` already set) would land on none of its
    usable nodes; empty when they can, or when no node serves the pool at all (flagged as `placement` already)."""
    usable = [n for n in nodes if discovery.usable_for(spec, n)]
    model = catalogue.models.get((pool.discovered or {}).get("gpu_model") or pool.gpu_model.key)
    if not usable or model is None:
        return []
    strategy = STRATEGY_FOR_SHARING_MODE.get(pool.sharing_mode)
    profiles: list[str | None] = [None]
    if pool.sharing_mode == MIG:
        offered = set((pool.discovered or {}).get("mig_profiles") or {})
        profiles = sorted(offered | set(catalogue.layout_profiles(pool.mig_layout, model.key))) or [None]
    profile_of_cluster = cluster_profile(cluster=cluster, pool=pool)
    problems = []
    for profile in profiles:
        request = _probe(pool=pool, strategy=strategy, profile=profile, model=model)
        what = f"{profile} slices" if profile else f"{strategy.replace('_', '-')} pods"
        try:
            selector = gpu_placement(make_context(request, profile_of_cluster)).node_selector
        except RenderError as exc:
            problems.append(f"{what} cannot be rendered: {exc}")
            continue
        if not any(all(n.labels.get(k) == v for k, v in selector.items()) for n in usable):
            wrong = sorted({f"{k}={n.labels.get(k, '(none)')}" for n in usable for k, v in selector.items()
                            if n.labels.get(k) != v})
            wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
            problems.append(f"{what} select {wanted}; its nodes have {', '.join(wrong)}")
    if not problems:
        return []
    return [{"field": FIELD, "declared": "placeable", "discovered": problems,
             "message": f"Pods rendered for {pool.name} would land on none of its nodes: {'; '.join(problems)}. "
                        "Nothing is placed on it until its nodes or its declaration change."}]

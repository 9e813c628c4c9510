"""Reads of clusters and inventory."""
from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from intake.decisions import ClusterSpec, Inventory, PoolSpec

from .catalogue import load_catalogue
from .choices import SharingMode, Strategy
from .models import Cluster, NodePool


def cluster_list() -> QuerySet[Cluster]:
    pools = NodePool.objects.select_related("gpu_model").order_by("name")
    return Cluster.objects.prefetch_related(Prefetch("pools", queryset=pools)).order_by("name")


def pool_spec(pool: NodePool, catalogue=None) -> PoolSpec:
    catalogue = catalogue or load_catalogue()
    profiles = {}
    if pool.sharing_mode == SharingMode.MIG and pool.gpu_model.key in catalogue.models:
        profiles = catalogue.layout_profiles(pool.mig_layout, pool.gpu_model.key)
    return PoolSpec(
        id=pool.id,
        cluster=pool.cluster.name,
        name=pool.name,
        gpu_model=pool.gpu_model.key,
        gpus_per_node=pool.gpus_per_node,
        node_count=pool.node_count,
        sharing_mode=pool.sharing_mode,
        mig_profiles=profiles,
        mig_layout=pool.mig_layout,
        mig_strategy=pool.mig_strategy,
        time_slicing_replicas=pool.time_slicing_replicas,
        driver_major=pool.driver_major,
        nvlink_domain=pool.nvlink_domain,
        scheduling_model=pool.effective_scheduling_model,
    )


def inventory_snapshot() -> Inventory:
    """What the decision function sees: enabled clusters and their pools, with the catalogue."""
    catalogue = load_catalogue()
    clusters = []
    for cluster in cluster_list().filter(enabled=True):
        pools = tuple(pool_spec(pool, catalogue) for pool in cluster.pools.all())
        clusters.append(
            ClusterSpec(
                id=cluster.id,
                name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                scheduling_model=cluster.scheduling_model,
                gang_scheduler=cluster.gang_scheduler,
                pools=pools,
            )
        )
    return Inventory(clusters=tuple(clusters), catalogue=catalogue)


# --- renderer inputs: the only place that turns database rows into the renderer's plain dataclasses -----------


def cluster_profile(*, cluster, pool) -> "ClusterProfile":
    from django.conf import settings

    from .manifests.spec import ClusterProfile, PoolProfile

    return ClusterProfile(
        name=cluster.name,
        kubernetes_version=cluster.kubernetes_version,
        scheduling_model=pool.effective_scheduling_model,
        gang_scheduler=cluster.gang_scheduler,
        gang_queue=cluster.gang_queue,
        label_domain=settings.PORTAL_LABEL_DOMAIN,
        pool=PoolProfile(
            name=pool.name,
            gpu_product=pool.gpu_model.product,
            sharing_mode=pool.sharing_mode,
            mig_strategy=pool.mig_strategy,
            mig_layout=pool.mig_layout,
            time_slicing_replicas=pool.time_slicing_replicas,
            time_slicing_renamed=pool.time_slicing_renamed,
            device_plugin_config=pool.device_plugin_config,
            node_selector=dict(pool.node_selector or {}),
            taints=tuple(pool.taints or ()),
            nvlink_domain=pool.nvlink_domain,
        ),
    )


def team_spec(*, team, cluster=None) -> "TeamSpec":
    """The team's namespace inputs. Its quotas (GPU equivalents per strategy) become per-resource caps for the
    cluster's pools: whole GPUs as devices, MIG as slices of each profile the cluster offers, time-slicing as
    shares. Each cap alone allows the whole quota; the exact sum is enforced at approval."""
    from .manifests.spec import TeamSpec

    quotas = {q.strategy: q.gpu_equivalents for q in team.gpu_quotas.all()}
    caps: dict[str, int] = {}
    if cluster is not None and quotas:
        catalogue = load_catalogue()
        for pool in cluster.pools.select_related("gpu_model"):
            if pool.sharing_mode == SharingMode.EXCLUSIVE and Strategy.WHOLE_GPU in quotas:
                caps["nvidia.com/gpu"] = int(quotas[Strategy.WHOLE_GPU])
            elif pool.sharing_mode == SharingMode.TIME_SLICING and Strategy.TIME_SLICING in quotas:
                name = "nvidia.com/gpu.shared" if pool.time_slicing_renamed else "nvidia.com/gpu"
                shares = int(quotas[Strategy.TIME_SLICING] * (pool.time_slicing_replicas or 1))
                caps[name] = max(caps.get(name, 0), shares)
            elif pool.sharing_mode == SharingMode.MIG and Strategy.MIG in quotas:
                model = catalogue.models.get(pool.gpu_model.key)
                for profile_name in catalogue.layout_profiles(pool.mig_layout, pool.gpu_model.key):
                    profile = model.mig.profiles[profile_name]
                    slices = int(quotas[Strategy.MIG] * model.mig.total_slices / profile.compute_slices)
                    caps[profile.resource_name] = max(caps.get(profile.resource_name, 0), slices)
    return TeamSpec(slug=team.slug, cost_center=team.cost_center, gpu_quota=caps)


def request_spec(*, gpu_request) -> "RequestSpec":
    return request_spec_from(request_id=gpu_request.pk, name=gpu_request.name, team=gpu_request.team,
                             answers=gpu_request.answers, decision=gpu_request.decision)


def request_spec_from(*, request_id: int, name: str, team, answers: dict, decision: dict) -> "RequestSpec":
    from .manifests.spec import GangSpec, RequestSpec

    model = load_catalogue().models.get(decision["gpu_model"])
    gang = decision.get("gang")
    return RequestSpec(
        request_id=request_id,
        name=name,
        team=team.slug,
        cost_center=team.cost_center,
        workload_class=answers["workload_class"],
        image=answers["image"],
        command=tuple(answers.get("command") or ()),
        replicas=decision["replicas"],
        gpus_per_replica=decision["gpus_per_replica"],
        gpu_memory_gb=float(answers["gpu_memory_gb"]),
        strategy=decision["strategy"],
        gpu_model=decision["gpu_model"],
        gpu_product=decision.get("gpu_product") or (model.product if model else ""),
        dra_product_name=model.dra_product_name if model else "",
        mig_profile=decision.get("mig_profile"),
        fabric_isolation=decision["fabric_isolation"],
        gang=GangSpec(min_members=gang["min_members"], backend=gang["backend"]) if gang else None,
        driver_min_major=(decision.get("driver") or {}).get("min_major"),
        gpu_equivalents_per_replica=f"{decision['gpu_equivalents_per_replica']:.6f}",
    )




def manifests_render(*, team, request_id: int, name: str, answers: dict, decision: dict) -> list[dict]:
    """Every object for one request, team objects first, in the order they are applied."""
    from .manifests import render_all

    pool = NodePool.objects.select_related("cluster", "gpu_model").get(
        cluster__name=decision["cluster"], name=decision["node_pool"]
    )
    return render_all(
        team_spec(team=team, cluster=pool.cluster),
        request_spec_from(request_id=request_id, name=name, team=team, answers=answers, decision=decision),
        cluster_profile(cluster=pool.cluster, pool=pool),
    )


def request_manifests(*, gpu_request) -> list[dict]:
    return manifests_render(team=gpu_request.team, request_id=gpu_request.pk, name=gpu_request.name,
                            answers=gpu_request.answers, decision=gpu_request.decision)


def pool_for_request(*, gpu_request) -> NodePool:
    decision = gpu_request.decision
    return NodePool.objects.select_related("cluster", "gpu_model").get(
        cluster__name=decision["cluster"], name=decision["node_pool"]
    )


def cluster_for_request(*, gpu_request) -> Cluster:
    return Cluster.objects.get(name=gpu_request.decision["cluster"])

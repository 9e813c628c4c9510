"""The renderer's inputs: the only place that turns database rows into the renderer's plain dataclasses (cluster
profile, team and request specs), and the rendered objects of one request."""
from __future__ import annotations

from dataclasses import replace

from gpu.catalogue import load_catalogue
from gpu.vocabulary import PRIORITY_VALUES, REPLICATED, REQUEST_HOLDING
from intake.choices import RequestOrigin
from intake.decisions import Decision
from intake.models import GpuRequest

from ..choices import SchedulingModel, SharingMode, Strategy
from ..dra_inputs import cluster_extended_resources, dra_device_caps, extended_resource_caps, offered_profiles
from ..manifests import RenderError, render, render_all
from ..manifests.admission_policy import approved_pods, renders_admission_policy
from ..manifests.device_plugin import build_device_plugin_config
from ..manifests.spec import ApprovedPods, ClusterProfile, GangSpec, NetworkPeer, PoolProfile, PrioritySpec, RequestSpec, TeamSpec
from ..models import NodePool
from .clusters import pool_for_decision
from .snapshot import mig_ready_label


def _network_peer(namespace: str, pod_labels: dict | None) -> NetworkPeer | None:
    return NetworkPeer(namespace=namespace, pod_labels=dict(pod_labels or {})) if namespace else None


def cluster_profile(*, cluster, pool) -> ClusterProfile:
    from django.conf import settings

    return ClusterProfile(
        name=cluster.name,
        kubernetes_version=cluster.kubernetes_version,
        scheduling_model=pool.effective_scheduling_model,
        gang_scheduler=cluster.gang_scheduler,
        gang_queue=cluster.gang_queue,
        dra_mps_support=cluster.dra_mps_support,
        gang_scheduler_owns_gpu_nodes=cluster.gang_scheduler_owns_gpu_nodes,
        label_domain=settings.PORTAL_LABEL_DOMAIN,
        ingress_controller=_network_peer(cluster.ingress_namespace, cluster.ingress_pod_labels),
        metrics_scraper=_network_peer(cluster.metrics_namespace, cluster.metrics_pod_labels),
        feature_gates=tuple(cluster.feature_gates or ()),
        jobset=cluster.jobset_installed,
        gang_topology_key=cluster.gang_topology_key,
        gang_topology_name=cluster.gang_topology_name,
        pool=PoolProfile(
            name=pool.name,
            # The product the pool's nodes carry, once discovery has seen them.
            gpu_product=(pool.discovered or {}).get("gpu_product") or pool.gpu_model.product,
            sharing_mode=pool.sharing_mode,
            mig_strategy=pool.mig_strategy,
            mig_layout=pool.mig_layout,
            time_slicing_replicas=pool.time_slicing_replicas,
            time_slicing_renamed=pool.time_slicing_renamed,
            device_plugin_config=pool.device_plugin_config,
            node_selector=dict(pool.node_selector or {}),
            taints=tuple(pool.taints or ()),
            nvlink_domain=pool.nvlink_domain,
            driver_major_label=(pool.discovered or {}).get("driver_major_label"),
            mig_ready_label=mig_ready_label(pool),
            gpu_memory_mib=getattr(load_catalogue().models.get(pool.gpu_model.key), "memory_mib", None),
            gpu_model=(pool.discovered or {}).get("gpu_model") or pool.gpu_model.key,
            dra_product_name=(pool.discovered or {}).get("dra_product_name") or "",
            multinode_nvlink=_multinode_nvlink(pool),
        ),
        dra_feature_gates=tuple(cluster.dra_feature_gates or ()),
        dra_extended_resources=cluster_extended_resources(cluster),
        # Discovered (inventory sync): GA since 1.30, but only a cluster that serves it may be sent one.
        admission_policies=bool(cluster.serves_admission_policies),
    )


def pool_device_plugin_config(*, pool: NodePool) -> dict | None:
    """The device plugin config the pool's nodes must run for what the portal renders there (None: DRA, or a pool
    whose declaration cannot say it). The platform puts it under the pool's `device_plugin_config` key."""
    try:
        return build_device_plugin_config(cluster_profile(cluster=pool.cluster, pool=pool).pool,
                                          scheduling_model=pool.effective_scheduling_model)
    except RenderError:
        return None


def _multinode_nvlink(pool) -> bool:
    model = load_catalogue().models.get(pool.gpu_model.key)
    return bool(model and model.multinode_nvlink)


def team_spec(*, team, cluster=None, pools=None) -> TeamSpec:
    """The team's namespace inputs. Its quotas (GPU equivalents per strategy) become per-resource caps for the
    cluster's pools. Device plugin pools: whole GPUs as devices, MIG as slices of each profile the cluster offers,
    time-slicing as shares; each cap alone allows the whole quota, the exact sum is enforced at approval. DRA pools
    (`dra_device_caps`): devices per DeviceClass. `pools`: the cluster's pools already loaded (with their GPU model),
    for callers rendering many requests without a query each."""
    quotas = {q.strategy: q.gpu_equivalents for q in team.gpu_quotas.all()}
    caps: dict[str, int] = {}
    dra_pools = []
    if cluster is not None and quotas:
        catalogue = load_catalogue()
        for pool in (pools if pools is not None else cluster.pools.select_related("gpu_model")):
            if pool.effective_scheduling_model == SchedulingModel.DRA:
                dra_pools.append(pool)
            elif pool.sharing_mode == SharingMode.EXCLUSIVE and Strategy.WHOLE_GPU in quotas:
                caps["nvidia.com/gpu"] = int(quotas[Strategy.WHOLE_GPU])
            elif pool.sharing_mode in REPLICATED and pool.sharing_mode in quotas:
                name = "nvidia.com/gpu.shared" if pool.time_slicing_renamed else "nvidia.com/gpu"
                shares = int(quotas[pool.sharing_mode] * (pool.time_slicing_replicas or 1))
                caps[name] = max(caps.get(name, 0), shares)
            elif pool.sharing_mode == SharingMode.MIG and Strategy.MIG in quotas:
                for profile in offered_profiles(pool, catalogue):
                    slices = int(quotas[Strategy.MIG] * profile.total_slices / profile.compute_slices)
                    caps[profile.resource_name] = max(caps.get(profile.resource_name, 0), slices)
        dra = dra_device_caps(quotas, dra_pools, catalogue)
        caps = extended_resource_caps(caps, dra, cluster)
    else:
        dra = {}
    return TeamSpec(slug=team.slug, cost_center=team.cost_center, gpu_quota=caps, dra_devices=dra)


def request_spec(*, gpu_request) -> RequestSpec:
    return request_spec_from(request_id=gpu_request.pk, name=gpu_request.name, team=gpu_request.team,
                             answers=gpu_request.answers, decision=gpu_request.decision)


def request_spec_from(*, request_id: int, name: str, team, answers: dict, decision: Decision) -> RequestSpec:
    model = load_catalogue().models.get(decision.gpu_model)
    gang = decision.gang
    return RequestSpec(
        request_id=request_id,
        name=name,
        team=team.slug,
        cost_center=team.cost_center,
        workload_class=answers["workload_class"],
        image=answers["image"],
        command=tuple(answers.get("command") or ()),
        replicas=decision.replicas,
        gpus_per_replica=decision.gpus_per_replica,
        gpu_memory_gb=float(answers["gpu_memory_gb"]),
        strategy=decision.strategy,
        gpu_model=decision.gpu_model,
        gpu_product=decision.gpu_product or (model.product if model else ""),
        dra_product_name=model.dra_product_name if model else "",
        mig_profile=decision.mig_profile,
        fabric_isolation=decision.fabric_isolation,
        gang=GangSpec(min_members=gang.min_members, backend=gang.backend) if gang else None,
        driver_min_major=decision.driver.min_major if decision.driver else None,
        gpu_equivalents_per_replica=f"{decision.gpu_equivalents_per_replica:.6f}",
        driver_branch=decision.driver.branch if decision.driver else None,
        dra_extended_resource=decision.dra_extended_resource,
        priority=priority_spec(decision.priority),
    )


def team_approvals(*, team, cluster, exclude: int) -> tuple[ApprovedPods, ...]:
    """The team's other requests on the cluster whose pods may run now (approved to stalled), as its admission policy
    admits them: each rendered again, its workload's owner and per-pod GPUs read back (manifests/admission_policy.py).
    One that no longer renders is left out: its pods are refused until it is provisioned again."""
    approvals = []
    # Requests found in a Kueue queue (origin "cluster") have no objects of the portal's to admit.
    holding = (GpuRequest.objects.filter(team=team, status__in=REQUEST_HOLDING, origin=RequestOrigin.PORTAL)
               .exclude(pk=exclude).order_by("pk"))
    for gpu_request in holding:
        decision = gpu_request.decision
        if decision is None or decision.cluster != cluster.name:
            continue
        try:
            pool = pool_for_decision(decision)
            objects = render(request_spec(gpu_request=gpu_request), cluster_profile(cluster=cluster, pool=pool))
        except (RenderError, NodePool.DoesNotExist):
            continue
        approvals.append(approved_pods(gpu_request.pk, objects))
    return tuple(approvals)


def priority_spec(priority) -> PrioritySpec | None:
    """The decision's priority with its tier's PriorityClass value; None: the scheduler's defaults, inherited."""
    if priority is None:
        return None
    return PrioritySpec(tier=priority.tier, value=PRIORITY_VALUES[priority.tier], preemptible=priority.preemptible,
                        grace_seconds=priority.grace_seconds, preempts=priority.preempts,
                        min_runtime_minutes=priority.min_runtime_minutes if priority.min_runtime_enforced else None)


def manifests_render(*, team, request_id: int, name: str, answers: dict, decision: Decision) -> list[dict]:
    """Every object for one request, team objects first, in the order they are applied. Without Kueue, the team's
    admission policy admits its other running requests as well as this one."""
    pool = pool_for_decision(decision)
    profile = cluster_profile(cluster=pool.cluster, pool=pool)
    spec = team_spec(team=team, cluster=pool.cluster)
    if renders_admission_policy(profile):
        spec = replace(spec, approved=team_approvals(team=team, cluster=pool.cluster, exclude=request_id))
    return render_all(
        spec,
        request_spec_from(request_id=request_id, name=name, team=team, answers=answers, decision=decision),
        profile,
    )


def request_manifests(*, gpu_request) -> list[dict]:
    return manifests_render(team=gpu_request.team, request_id=gpu_request.pk, name=gpu_request.name,
                            answers=gpu_request.answers, decision=gpu_request.decision)

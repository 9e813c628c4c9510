"""Reads of clusters and inventory: the decision function's snapshot, renderer inputs, and capacity,
the fit check, quotas and driver upgrade impact."""
from __future__ import annotations

import dataclasses
import datetime
import re
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import DecimalField, Prefetch, QuerySet, Subquery, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from intake.choices import REQUEST_HOLDING
from intake.decisions import ClusterSpec, Inventory, PoolSpec
from portal.roles import is_platform
from gpu.catalogue import load_catalogue
from gpu.vocabulary import REPLICATED, SHARE_UNITS, STRATEGY_ADJECTIVES

from . import discovery, fit
from .dra_inputs import (
    cluster_extended_resources,
    decided_replicas,
    dra_device_caps,
    dra_extended_resources,
    offered_profiles,
)
from .inventory import no_api_server_note
from .choices import MigStrategy, SchedulingModel, SharingMode, Strategy
from .manifests.spec import ClusterProfile, GangSpec, NetworkPeer, PoolProfile, RequestSpec, TeamSpec
from .models import Cluster, InventoryGeneration, Node, NodePool, TeamQuota


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
        time_slicing_replicas=decided_replicas(pool, pool.time_slicing_replicas),
        driver_major=pool.driver_major,
        nvlink_domain=pool.nvlink_domain,
        scheduling_model=pool.effective_scheduling_model,
        dra_extended_resources=dra_extended_resources(pool),
    )


def discovered_pool_spec(pool: NodePool, catalogue=None) -> PoolSpec | None:
    """A pool of a synced cluster as its nodes offer it now: the GPU model on its nodes, the MIG
    profiles they advertise, the lowest driver present, their NVLink domain; counted over the nodes that serve
    what the pool is rendered for. None when no such node is left (nothing can be placed there)."""
    catalogue = catalogue or load_catalogue()
    seen = pool.discovered or {}
    if not seen.get("usable_node_count") or seen.get("gpu_model") not in catalogue.models:
        return None
    return PoolSpec(
        id=pool.id,
        cluster=pool.cluster.name,
        name=pool.name,
        gpu_model=seen["gpu_model"],
        gpus_per_node=seen.get("gpus_per_node") or pool.gpus_per_node,
        node_count=seen["usable_node_count"],
        sharing_mode=pool.sharing_mode,
        mig_profiles=dict(seen.get("mig_profiles") or {}) if pool.sharing_mode == SharingMode.MIG else {},
        mig_layout=pool.mig_layout,
        mig_strategy=pool.mig_strategy,
        time_slicing_replicas=decided_replicas(pool, seen.get("time_slicing_replicas") or pool.time_slicing_replicas),
        driver_major=seen.get("min_driver_major"),
        nvlink_domain=seen.get("nvlink_domain") or "",
        scheduling_model=pool.effective_scheduling_model,
        dra_extended_resources=dra_extended_resources(pool),
    )


def inventory_snapshot() -> Inventory:
    """What the decision function sees: enabled clusters and their pools, with the catalogue. A cluster that was
    never synced offers its declared pools as declared; a synced one offers what discovery found."""
    catalogue = load_catalogue()
    clusters = []
    for cluster in cluster_list().filter(enabled=True):
        if cluster.last_synced_at is None:
            pools = tuple(pool_spec(pool, catalogue) for pool in cluster.pools.all())
        else:
            pools = tuple(spec for pool in cluster.pools.all() if (spec := discovered_pool_spec(pool, catalogue)))
        clusters.append(
            ClusterSpec(
                id=cluster.id,
                name=cluster.name,
                kubernetes_version=cluster.kubernetes_version,
                scheduling_model=cluster.scheduling_model,
                gang_scheduler=cluster.gang_scheduler,
                pools=pools,
                feature_gates=tuple(cluster.feature_gates or ()),
                jobset=cluster.jobset_installed,
                gang_topology_key=cluster.gang_topology_key,
                gang_topology_name=cluster.gang_topology_name,
            )
        )
    return Inventory(clusters=tuple(clusters), catalogue=catalogue)


def inventory_generation() -> Subquery:
    """The inventory's generation as an expression, for a caller to read beside its own stamps in one query: it
    changes, in the writing transaction, with every write to what `inventory_snapshot` reads (database triggers,
    provisioning.models.InventoryGeneration)."""
    return Subquery(InventoryGeneration.objects.filter(pk=1).values("generation")[:1])


# --- renderer inputs: the only place that turns database rows into the renderer's plain dataclasses -----------


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
            gpu_memory_mib=getattr(load_catalogue().models.get(pool.gpu_model.key), "memory_mib", None),
            gpu_model=(pool.discovered or {}).get("gpu_model") or pool.gpu_model.key,
            dra_product_name=(pool.discovered or {}).get("dra_product_name") or "",
            multinode_nvlink=_multinode_nvlink(pool),
        ),
        dra_feature_gates=tuple(cluster.dra_feature_gates or ()),
        dra_extended_resources=cluster_extended_resources(cluster),
    )


def pool_device_plugin_config(*, pool: NodePool) -> dict | None:
    """The device plugin config the pool's nodes must run for what the portal renders there (None: DRA, or a pool
    whose declaration cannot say it). The platform puts it under the pool's `device_plugin_config` key."""
    from .manifests import RenderError
    from .manifests.device_plugin import build_device_plugin_config

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
    else:
        dra = {}
    return TeamSpec(slug=team.slug, cost_center=team.cost_center, gpu_quota=caps, dra_devices=dra)


def request_spec(*, gpu_request) -> RequestSpec:
    return request_spec_from(request_id=gpu_request.pk, name=gpu_request.name, team=gpu_request.team,
                             answers=gpu_request.answers, decision=gpu_request.decision)


def request_spec_from(*, request_id: int, name: str, team, answers: dict, decision: dict) -> RequestSpec:
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
        driver_branch=(decision.get("driver") or {}).get("branch"),
        dra_extended_resource=decision.get("dra_extended_resource"),
    )


def manifests_render(*, team, request_id: int, name: str, answers: dict, decision: dict) -> list[dict]:
    """Every object for one request, team objects first, in the order they are applied."""
    from .manifests import render_all

    pool = pool_for_decision(decision)
    return render_all(
        team_spec(team=team, cluster=pool.cluster),
        request_spec_from(request_id=request_id, name=name, team=team, answers=answers, decision=decision),
        cluster_profile(cluster=pool.cluster, pool=pool),
    )


def request_manifests(*, gpu_request) -> list[dict]:
    return manifests_render(team=gpu_request.team, request_id=gpu_request.pk, name=gpu_request.name,
                            answers=gpu_request.answers, decision=gpu_request.decision)


def pool_for_decision(decision: dict) -> NodePool:
    """The pool (with its cluster and GPU model) a decision placed the request on."""
    return NodePool.objects.select_related("cluster", "gpu_model").get(
        cluster__name=decision["cluster"], name=decision["node_pool"]
    )


def cluster_for_request(*, gpu_request) -> Cluster:
    return Cluster.objects.get(name=gpu_request.decision["cluster"])


# --- capacity, the fit check, quotas and driver upgrade impact ---------

HOLDING_STATUSES = tuple(str(s) for s in REQUEST_HOLDING)
QUOTA_WORDS = STRATEGY_ADJECTIVES
DRIVER_VERSION_RE = re.compile(r"^\d{3}(\.\d+){0,2}$")


def cluster_detail_list() -> QuerySet[Cluster]:
    """Clusters with pools and present nodes loaded up front (a constant number of queries for any list)."""
    pools = NodePool.objects.select_related("gpu_model").order_by("name")
    nodes = Node.objects.filter(present=True).select_related("gpu_model", "pool").order_by("name")
    return Cluster.objects.prefetch_related(
        Prefetch("pools", queryset=pools), Prefetch("nodes", queryset=nodes)
    ).order_by("name")


def node_capacity_row(node: Node) -> discovery.NodeCapacityRow:
    return discovery.NodeCapacityRow(
        name=node.name, gpu_model=node.gpu_model.key if node.gpu_model else None, sharing_mode=node.sharing_mode,
        gpu_replicas=node.gpu_replicas, gpu_resources=dict(node.gpu_resources or {}),
        gpu_used=dict(node.gpu_used or {}), mig_devices=dict(node.mig_devices or {}),
        schedulable=not node.unschedulable, mig_strategy=node.mig_strategy,
    )  # fmt: skip


def capacity_of(nodes) -> dict:
    """Free and used GPUs by strategy over these (prefetched) nodes."""
    return discovery.capacity_by_strategy((node_capacity_row(n) for n in nodes), load_catalogue())


def _number(value) -> str:
    """36 -> "36", 0.2857 -> "0.286": quota figures as people read them."""
    return f"{Decimal(value):.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class QuotaState:
    team: str
    strategy: str
    limit: Decimal | None  # None: no quota row, unlimited
    held: Decimal
    requested: Decimal

    @property
    def would_hold(self) -> Decimal:
        return self.held + self.requested

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.would_hold > self.limit

    @property
    def message(self) -> str:
        words = QUOTA_WORDS.get(self.strategy, self.strategy)
        if self.limit is None:
            return (f"Team {self.team} has no {words} quota: unlimited (inherited, not a decision); it would hold "
                    f"{_number(self.would_hold)} {words} equivalents: {_number(self.held)} held + "
                    f"{_number(self.requested)} requested.")
        return (f"Team {self.team} would hold {_number(self.would_hold)} of {_number(self.limit)} {words} "
                f"equivalents: {_number(self.held)} held + {_number(self.requested)} requested.")

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy, "limit": float(self.limit) if self.limit is not None else None,
            "inherited": self.limit is None, "held": round(float(self.held), 6),
            "requested": round(float(self.requested), 6), "would_hold": round(float(self.would_hold), 6),
            "exceeded": self.exceeded, "message": self.message,
        }  # fmt: skip


def team_quota_state(*, team, strategy: str, requested, exclude_request_id: int | None = None) -> QuotaState:
    """The team's quota for one strategy and what its requests hold: one SQL sum over the decisions' GPU
    equivalents of its approved, provisioning, running and stalled requests."""
    from intake.models import GpuRequest

    quota = TeamQuota.objects.filter(team=team, strategy=strategy).values_list("gpu_equivalents", flat=True).first()
    holding = GpuRequest.objects.filter(team=team, strategy=strategy, status__in=HOLDING_STATUSES)
    if exclude_request_id is not None:
        holding = holding.exclude(pk=exclude_request_id)
    held = holding.aggregate(
        total=Sum(Cast(KeyTextTransform("gpu_equivalents", "decision"), DecimalField(max_digits=14, decimal_places=6)))
    )["total"] or Decimal(0)
    return QuotaState(team=team.slug, strategy=strategy, limit=quota, held=Decimal(held),
                      requested=Decimal(str(requested)))


def _demand(decision: dict, pool: NodePool) -> fit.Demand:
    strategy, profile = decision["strategy"], decision.get("mig_profile")
    per_pod, pods = int(decision["gpus_per_replica"]), int(decision["replicas"])
    model = load_catalogue().models.get(decision["gpu_model"])
    dra = decision.get("scheduling_model", pool.effective_scheduling_model) == SchedulingModel.DRA
    if dra:
        # Every replica's claim holds its own devices, time-sliced requests included.
        resource = f"{discovery.DRA_MIG_PREFIX}{profile}" if strategy == Strategy.MIG else discovery.DRA_GPU
    elif strategy == Strategy.MIG:
        spec = model.mig.profiles.get(profile) if model and model.mig else None
        resource = discovery.GPU if pool.mig_strategy == MigStrategy.SINGLE else (
            spec.resource_name if spec else f"{discovery.MIG_PREFIX}{profile}")
    elif strategy in REPLICATED:
        resource = discovery.GPU_SHARED if pool.time_slicing_renamed else discovery.GPU
    else:
        resource = discovery.GPU
    unit = "GPU" if dra and strategy in REPLICATED else {Strategy.MIG: f"{profile} slice", **SHARE_UNITS}.get(
        strategy, "GPU")
    return fit.Demand(
        resource=resource, per_pod=per_pod, pods=pods, gang=bool(decision.get("gang")),
        gpu_model=decision["gpu_model"], unit=unit, profile=profile if strategy == Strategy.MIG else None,
        min_driver_major=(decision.get("driver") or {}).get("min_major"),
        driver_branch=(decision.get("driver") or {}).get("branch"),
        tolerations=tuple({"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")}
                          for t in pool.taints or ()),
    )  # fmt: skip


def _declared_slots(pool: NodePool, demand: fit.Demand) -> list[fit.NodeSlot]:
    """The declared pool as empty nodes: what a never-synced cluster would offer with nothing running."""
    catalogue = load_catalogue()
    resources: dict[str, int] = {}
    mig_devices = {}
    if pool.sharing_mode == SharingMode.MIG:
        mig_devices = {p: n * pool.gpus_per_node for p, n in
                       catalogue.layout_profiles(pool.mig_layout, pool.gpu_model.key).items()}
        model = catalogue.models.get(pool.gpu_model.key)
        for profile, count in mig_devices.items():
            if pool.effective_scheduling_model == SchedulingModel.DRA:
                key = f"{discovery.DRA_MIG_PREFIX}{profile}"
            elif pool.mig_strategy == MigStrategy.SINGLE:
                key = discovery.GPU
            else:
                key = model.mig.profiles[profile].resource_name
            resources[key] = resources.get(key, 0) + count
    elif pool.effective_scheduling_model == SchedulingModel.DRA:
        resources[discovery.DRA_GPU] = pool.gpus_per_node
    elif pool.sharing_mode in REPLICATED:
        key = discovery.GPU_SHARED if pool.time_slicing_renamed else discovery.GPU
        resources[key] = pool.gpus_per_node * (pool.time_slicing_replicas or 1)
    else:
        resources[discovery.GPU] = pool.gpus_per_node
    driver = pool.driver_major
    return [
        fit.NodeSlot(name=f"{pool.name}-{i + 1}", gpu_model=pool.gpu_model.key, resources=resources,
                     driver_major=driver, mig_devices=mig_devices, mig_config=pool.mig_layout)
        for i in range(pool.node_count)
    ]


def _holders(nodes: list[Node], *, exclude_request_id: int | None,
             visible_team_ids: set[int] | None = None) -> list[fit.Holder]:
    """Running work on these nodes, per request (or per pod the portal did not make). With `visible_team_ids`
    (an engineer's teams), work of other teams is shown without its name, team or pods."""
    from intake.models import GpuRequest

    pods_by_key: dict[str, list[tuple[str, dict]]] = {}
    for node in nodes:
        for pod in node.gpu_pods or []:
            if pod.get("request_id") == exclude_request_id and exclude_request_id is not None:
                continue
            pods_by_key.setdefault(_holder_key(pod), []).append((node.name, pod))
    ids = [int(k.split(":")[1]) for k in pods_by_key if k.startswith("request:")]
    requests = {r.pk: r for r in GpuRequest.objects.filter(pk__in=ids).select_related("team")}
    holders = []
    for key, entries in sorted(pods_by_key.items()):
        held: dict[str, dict[str, int]] = {}
        for node_name, pod in entries:
            for resource, count in (pod.get("resources") or {}).items():
                held.setdefault(node_name, {})[resource] = held.get(node_name, {}).get(resource, 0) + count
        starts = sorted(p["started_at"] for _, p in entries if p.get("started_at"))
        request = requests.get(int(key.split(":")[1])) if key.startswith("request:") else None
        hidden = visible_team_ids is not None and (request is None or request.team_id not in visible_team_ids)
        if request is not None:
            hours = request.answers.get("expected_hours")
            start = datetime.datetime.fromisoformat(starts[0].replace("Z", "+00:00")) if starts else None
            end = start + datetime.timedelta(hours=float(hours)) if start and hours else None
            if hidden:
                holders.append(fit.Holder(key=key, label="running work of another team", held=held,
                                          expected_end=end))
                continue
            label = f"#{request.pk} {request.team.slug}/{request.name} ({request.status})"
            holders.append(fit.Holder(key=key, label=label, held=held, request_id=request.pk,
                                      team=request.team.slug, expected_end=end))
        elif hidden:
            holders.append(fit.Holder(key=key, label="running work the portal did not start", held=held))
        else:
            _, pod = entries[0]
            owner = f"request #{key.split(':')[1]} (unknown to this portal)" if key.startswith("request:") else (
                f"pod {pod['namespace']}/{pod['name']} (not from the portal)")
            holders.append(fit.Holder(key=key, label=owner, held=held))
    return holders


def request_fit(*, gpu_request, user=None, missing_pods: int | None = None,
                visible_team_ids: set[int] | None = None) -> dict:
    """Does the request fit its pool, node by node, now? With the projected GPU-hours and the team's quota.
    For `user` an engineer, other teams' running work is not named (team visibility). With `missing_pods` (a
    stalled gang): do that many more of its pods fit beside its own running ones? `visible_team_ids`: name only
    these teams' work (for a reading stored for every viewer)."""
    from portal.selectors import team_visible_ids

    decision, answers = gpu_request.decision, gpu_request.answers
    hours = answers.get("expected_hours")
    devices = int(decision["gpus_per_replica"]) * int(decision["replicas"])
    equivalents = float(decision["gpu_equivalents"])
    projection = {
        "expected_hours": hours,
        "gpu_equivalents": equivalents,
        "gpu_hours": round(equivalents * float(hours), 3) if hours else None,
        "devices": devices,
        "device_hours": round(devices * float(hours), 3) if hours else None,
        "note": "GPU equivalents x expected_hours" if hours else "no expected_hours given: no projection",
    }
    quota = team_quota_state(team=gpu_request.team, strategy=decision["strategy"], requested=equivalents,
                             exclude_request_id=gpu_request.pk)
    base = {"cluster": decision["cluster"], "node_pool": decision["node_pool"], "projection": projection,
            "quota": quota.as_dict()}
    pool = NodePool.objects.select_related("cluster", "gpu_model").filter(
        cluster__name=decision["cluster"], name=decision["node_pool"]).first()
    if pool is None:
        return {**base, "basis": "declared", "synced_at": None, "demand": None,
                **fit.FitAnswer(fit.NEVER, f"Pool {decision['cluster']}/{decision['node_pool']} does not exist any "
                                           "more; the request must be placed again.").as_dict()}
    demand = _demand(decision, pool)
    if missing_pods is not None:
        demand = dataclasses.replace(demand, pods=missing_pods)
    synced_at = pool.cluster.last_synced_at
    free_now: dict[str, int] = {}
    if synced_at is None:
        answer = fit.check_fit(demand, _declared_slots(pool, demand))
        answer.reason = (f"Based on the declared pool ({pool.cluster.name} has never been synced, so running work "
                         f"is not known): {answer.reason}")
        basis = "declared"
    else:
        nodes = list(pool.nodes.filter(present=True).select_related("gpu_model").order_by("name"))
        own = {n.name: {} for n in nodes}
        for node in nodes:  # a request's own pods do not stand in its way (unless the rest of its gang waits)
            for pod in node.gpu_pods or []:
                if pod.get("request_id") == gpu_request.pk and missing_pods is None:
                    for key, count in (pod.get("resources") or {}).items():
                        own[node.name][key] = own[node.name].get(key, 0) + count
        slots = [
            fit.NodeSlot(
                name=n.name, gpu_model=n.gpu_model.key if n.gpu_model else None,
                resources=dict(n.gpu_resources or {}),
                used={k: v - own[n.name].get(k, 0) for k, v in (n.gpu_used or {}).items()},
                schedulable=not n.unschedulable, taints=tuple(n.taints or ()), driver_major=n.driver_major,
                mig_devices=dict(n.mig_devices or {}), mig_config=n.mig_config, usable=n.usable,
            )
            for n in nodes
        ]  # fmt: skip
        visible = team_visible_ids(user=user) if user is not None else visible_team_ids
        free_now = fit.free_by_node(demand, slots)
        answer = fit.check_fit(demand, slots,
                               _holders(nodes, exclude_request_id=gpu_request.pk, visible_team_ids=visible))
        if not nodes:
            answer.reason = f"No node of {pool.cluster.name}/{pool.name} was found at the last sync."
        basis = "discovered"
    demand_view = {"resource": demand.resource, "per_pod": demand.per_pod, "pods": demand.pods, "gang": demand.gang,
                   "gpu_model": demand.gpu_model, "min_driver_major": demand.min_driver_major}
    return {**base, "basis": basis, "synced_at": synced_at, "demand": demand_view, "free_by_node": free_now,
            **answer.as_dict()}


def driver_upgrade_impact(*, pool: NodePool, driver_version: str, requests=None) -> dict:
    """If `pool` moved to `driver_version`: the approved, provisioning, running and stalled requests placed on it
    that could no longer be scheduled there (their driver floor, or the GPU's MIG minimum), with their owners.
    `requests`: live requests already loaded (with team and requester), for callers asking about many pools;
    those placed on this pool are checked."""
    from intake.models import GpuRequest
    from portal.errors import InvalidInput

    if not DRIVER_VERSION_RE.match(driver_version or ""):
        raise InvalidInput("A driver version such as 580.65.06.", field="driver_version")
    major = int(driver_version.split(".")[0])
    catalogue = load_catalogue()

    def version_key(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".") if p.isdigit())

    if requests is None:
        requests = (
            GpuRequest.objects.filter(status__in=HOLDING_STATUSES, decision__cluster=pool.cluster.name,
                                      decision__node_pool=pool.name)
            .select_related("team", "requested_by").order_by("id")
        )
    else:
        requests = sorted((r for r in requests if r.status in HOLDING_STATUSES
                           and r.decision.get("cluster") == pool.cluster.name
                           and r.decision.get("node_pool") == pool.name), key=lambda r: r.pk)
    affected = []
    for request in requests:
        # The decided requirement: the strictest floor of the answer and the policy's rules, and a pinned branch.
        driver = request.decision.get("driver") or {}
        floor = driver.get("min_major") or request.answers.get("min_driver_major")
        reasons = []
        if driver.get("branch") and int(driver["branch"]) != major:
            reasons.append(f"is kept on the driver {driver['branch']} branch")
        elif floor and int(floor) > major:
            reasons.append(f"asks for driver {floor} or newer")
        model = catalogue.models.get(request.decision.get("gpu_model", ""))
        if request.strategy == Strategy.MIG and model and model.mig and (
            version_key(driver_version) < version_key(model.mig.min_driver)
        ):
            reasons.append(f"MIG on {model.key} needs driver {model.mig.min_driver} or newer")
        if reasons:
            affected.append({
                "request_id": request.pk, "name": request.name, "status": request.status,
                "team": request.team.slug, "cost_center": request.team.cost_center,
                "requested_by": request.requested_by.get_username(),
                "requested_by_email": request.requested_by.email, "min_driver_major": floor,
                "strategy": request.strategy, "reason": "; ".join(reasons),
            })  # fmt: skip
    current = (pool.discovered or {}).get("driver_versions") or ([pool.driver_version] if pool.driver_version else [])
    return {
        "cluster": pool.cluster.name, "pool": pool.name, "driver_version": driver_version, "driver_major": major,
        "current_driver_versions": current, "requests_checked": len(requests), "affected": affected,
    }  # fmt: skip


def pool_get(*, cluster_id, pool_id) -> NodePool:
    from portal.errors import NotFound

    pool = NodePool.objects.select_related("cluster", "gpu_model").filter(pk=pool_id, cluster_id=cluster_id).first() \
        if str(pool_id).isdigit() and str(cluster_id).isdigit() else None
    if pool is None:
        raise NotFound("No such pool in this cluster.")
    return pool


def mig_planner_inputs(*, cluster: Cluster, now: datetime.datetime) -> tuple[list, list]:
    """The MIG planner's inputs for one synced cluster: the devices pending and approved MIG requests ask for, per
    pool, and the pools' MIG nodes with the workloads a layout change would interrupt."""
    from intake.models import GpuRequest

    from .migplan import MigDemand, MigNode, Workload

    catalogue = load_catalogue()
    demand = [
        MigDemand(
            request_id=r.pk, label=f"#{r.pk} {r.team.slug}/{r.name} ({r.status})", pool=r.decision["node_pool"],
            gpu_model=r.decision["gpu_model"], profile=r.decision["mig_profile"],
            devices=int(r.decision["gpus_per_replica"]) * int(r.decision["replicas"]),
        )
        for r in GpuRequest.objects.filter(status__in=("pending_approval", "approved"), strategy=Strategy.MIG,
                                           decision__cluster=cluster.name).select_related("team").order_by("id")
        if r.decision.get("mig_profile")
    ]  # fmt: skip
    nodes = list(
        Node.objects.filter(cluster=cluster, present=True, pool__isnull=False, sharing_mode=SharingMode.MIG,
                            gpu_model__isnull=False).select_related("pool", "gpu_model").order_by("name")
    )
    holders = {h.key: h for h in _holders(nodes, exclude_request_id=None)}
    owners = _owners([h.request_id for h in holders.values() if h.request_id])
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
                                                                  if _holder_key(p) == holder.key),
                remaining_seconds=max(remaining, 0) if remaining is not None else None,
            ))  # fmt: skip
        mig_nodes.append(MigNode(
            name=node.name, pool=node.pool.name, gpu_model=node.gpu_model.key, gpu_count=node.gpu_count,
            mig_config=node.mig_config, offered=dict(node.mig_devices or {}), used=used,
            mig_strategy=node.mig_strategy or "mixed", schedulable=not node.unschedulable,
            config_state=node.mig_config_state, workloads=tuple(workloads),
        ))  # fmt: skip
    return demand, mig_nodes


def _holder_key(pod: dict) -> str:
    return f"request:{pod['request_id']}" if pod.get("request_id") else f"pod:{pod['namespace']}/{pod['name']}"


def _owners(request_ids) -> dict[int, str]:
    from intake.models import GpuRequest

    return dict(GpuRequest.objects.filter(pk__in=list(request_ids)).values_list("pk", "requested_by__username"))


SYNC_FAILED_FOR_OTHERS = "The last inventory sync failed; the platform team has the details."


def cluster_sync_error_for(*, user, cluster: Cluster) -> str:
    """The last sync error as `user` may see it: the platform team reads the detail, which can quote what the API
    server (or whatever answered at its URL) sent; everyone else a generic line. The portal's own note on a
    cluster without an API server is shown to all."""
    if not cluster.last_sync_error or is_platform(user) or cluster.last_sync_error == no_api_server_note(cluster):
        return cluster.last_sync_error
    return SYNC_FAILED_FOR_OTHERS

"""Does a request fit its pool, node by node, now: its demand, the pool's nodes as the last sync saw them (or the
declared pool as empty nodes), the running work in its way, the projected GPU-hours and the team's quota."""
from __future__ import annotations

import dataclasses

from gpu.catalogue import load_catalogue
from gpu.vocabulary import REPLICATED, SHARE_UNITS
from intake.decisions import Decision
from portal.selectors import team_visible_ids

from .. import discovery, fit
from ..choices import MigStrategy, SchedulingModel, SharingMode, Strategy
from ..models import NodePool
from .holders import running_holders
from .quota import team_quota_state


def _demand(decision: Decision, pool: NodePool) -> fit.Demand:
    strategy, profile = decision.strategy, decision.mig_profile
    per_pod, pods = int(decision.gpus_per_replica), int(decision.replicas)
    model = load_catalogue().models.get(decision.gpu_model)
    dra = (decision.scheduling_model or pool.effective_scheduling_model) == SchedulingModel.DRA
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
        resource=resource, per_pod=per_pod, pods=pods, gang=bool(decision.gang),
        gpu_model=decision.gpu_model, unit=unit, profile=profile if strategy == Strategy.MIG else None,
        min_driver_major=decision.driver.min_major if decision.driver else None,
        driver_branch=decision.driver.branch if decision.driver else None,
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


def request_fit(*, gpu_request, user=None, missing_pods: int | None = None,
                visible_team_ids: set[int] | None = None) -> dict:
    """Does the request fit its pool, node by node, now? With the projected GPU-hours and the team's quota.
    For `user` an engineer, other teams' running work is not named (team visibility). With `missing_pods` (a
    stalled gang): do that many more of its pods fit beside its own running ones? `visible_team_ids`: name only
    these teams' work (for a reading stored for every viewer)."""
    decision, answers = gpu_request.decision, gpu_request.answers
    hours = answers.get("expected_hours")
    devices = int(decision.gpus_per_replica) * int(decision.replicas)
    equivalents = float(decision.gpu_equivalents)
    projection = {
        "expected_hours": hours,
        "gpu_equivalents": equivalents,
        "gpu_hours": round(equivalents * float(hours), 3) if hours else None,
        "devices": devices,
        "device_hours": round(devices * float(hours), 3) if hours else None,
        "note": "GPU equivalents x expected_hours" if hours else "no expected_hours given: no projection",
    }
    quota = team_quota_state(team=gpu_request.team, strategy=decision.strategy, requested=equivalents,
                             exclude_request_id=gpu_request.pk)
    base = {"cluster": decision.cluster, "node_pool": decision.node_pool, "projection": projection,
            "quota": quota.as_dict()}
    pool = NodePool.objects.select_related("cluster", "gpu_model").filter(
        cluster__name=decision.cluster, name=decision.node_pool).first()
    if pool is None:
        return {**base, "basis": "declared", "synced_at": None, "demand": None,
                **fit.FitAnswer(fit.NEVER, f"Pool {decision.cluster}/{decision.node_pool} does not exist any "
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
                               running_holders(nodes, exclude_request_id=gpu_request.pk, visible_team_ids=visible))
        if not nodes:
            answer.reason = f"No node of {pool.cluster.name}/{pool.name} was found at the last sync."
        basis = "discovered"
    demand_view = {"resource": demand.resource, "per_pod": demand.per_pod, "pods": demand.pods, "gang": demand.gang,
                   "gpu_model": demand.gpu_model, "min_driver_major": demand.min_driver_major}
    return {**base, "basis": basis, "synced_at": synced_at, "demand": demand_view, "free_by_node": free_now,
            **answer.as_dict()}

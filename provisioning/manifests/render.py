"""Entry points: render one request, one team, or both in apply order.

Apply order: Namespace, ResourceQuota, NetworkPolicies, queue, priority classes (manifests/priority.py), claims and
gang objects, Services, PodDisruptionBudget, workload.
Everything is a plain dict; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import replace

from gpu.vocabulary import DEVELOPMENT, INFERENCE, TRAINING

from .admission_policy import approved_pods
from .context import RenderContext, make_context
from .devices import GpuPlacement, gpu_placement
from .errors import RenderError
from .gang import gang_wiring, scheduler_wiring
from .labels import mark_owned
from .restart import build_jobset, child_job_name, whole_gang_fails
from .names import child_name, service_name
from .nvlink import add_imex_channel
from .priority import priority_objects
from .spec import ClusterProfile, RequestSpec, TeamSpec
from .team import render_team
from .workloads import (
    HTTP_PORT,
    RENDEZVOUS_PORT,
    build_container,
    build_deployment,
    build_headless_service,
    build_inference_readiness_probe,
    build_job,
    build_pod_disruption_budget,
    build_pod_template,
    build_service,
    build_training_env,
)


def _render_training(ctx: RenderContext, placement: GpuPlacement) -> list[dict]:
    name = ctx.base
    headless = service_name(ctx.base)
    multi_pod = ctx.request.gang is not None
    use_jobset = multi_pod and ctx.cluster.jobset
    # Under JobSet the pods belong to its child Job, whose name gives them their hostnames.
    job_name = child_job_name(name) if use_jobset else name
    owner_kind = ("jobset.x-k8s.io", "JobSet") if use_jobset else ("batch", "Job")
    gang = gang_wiring(ctx, name, placement, owner_kind=owner_kind) or scheduler_wiring(ctx)
    container = build_container(
        ctx,
        placement,
        env=build_training_env(ctx, job_name, headless),
        ports=[{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT, "protocol": "TCP"}],
    )
    template = build_pod_template(ctx, placement, container, restart_policy="Never", gang=gang, subdomain=headless)
    job = build_job(ctx, name, template, gang)
    if multi_pod:
        job["spec"]["podFailurePolicy"] = whole_gang_fails()
    workload = build_jobset(ctx, name, job) if use_jobset else job
    # Gang objects live as long as the workload: deleting it lets the garbage collector remove them.
    owned = [mark_owned(obj, workload, ctx.domain) for obj in (gang.objects if gang else ())]
    return [*placement.objects, *owned, build_headless_service(ctx, headless), workload]


def _render_inference(ctx: RenderContext, placement: GpuPlacement) -> list[dict]:
    gang_wiring(ctx, ctx.base, placement)  # rejects a gang on a Deployment
    container = build_container(
        ctx,
        placement,
        ports=[{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}],
        readiness=build_inference_readiness_probe(),
    )
    wiring = scheduler_wiring(ctx)
    template = build_pod_template(ctx, placement, container, restart_policy="Always", gang=wiring)
    return [
        *placement.objects,
        build_service(ctx, service_name(ctx.base)),
        build_pod_disruption_budget(ctx, child_name(ctx.base, "pdb")),
        build_deployment(ctx, ctx.base, template, replicas=ctx.request.replicas, rolling=True, gang=wiring),
    ]


def _render_development(ctx: RenderContext, placement: GpuPlacement) -> list[dict]:
    gang_wiring(ctx, ctx.base, placement)  # rejects a gang on a Deployment
    if ctx.request.replicas != 1:
        raise RenderError(
            f"A development environment is a single replica; the request asks for {ctx.request.replicas}. "
            "Ask for one replica, or use the inference or training class."
        )
    container = build_container(ctx, placement)
    wiring = scheduler_wiring(ctx)
    template = build_pod_template(ctx, placement, container, restart_policy="Always", gang=wiring)
    # Recreate: the old pod must release its GPU before the new one can get it.
    return [*placement.objects, build_deployment(ctx, ctx.base, template, replicas=1, rolling=False, gang=wiring)]


_RENDERERS = {
    TRAINING: _render_training,
    INFERENCE: _render_inference,
    DEVELOPMENT: _render_development,
}


def render(request: RequestSpec, cluster: ClusterProfile) -> list[dict]:
    """The request's own objects (no namespace or quota) in apply order. Raises RenderError."""
    ctx = make_context(request, cluster)
    placement = gpu_placement(ctx)
    add_imex_channel(ctx, placement)
    objects = _RENDERERS[request.workload_class](ctx, placement)
    # The ComputeDomain lives as long as the workload (the last object) whose pods use it.
    return [mark_owned(o, objects[-1], ctx.domain) if o["kind"] == "ComputeDomain" else o for o in objects]


def render_priority(request: RequestSpec, cluster: ClusterProfile) -> list[dict]:
    """The cluster-scoped priority classes the request's objects name (none without a decided priority): shared
    by every request of the tier, so they carry no request label and outlive each request."""
    return priority_objects(make_context(request, cluster))


def render_all(team: TeamSpec, request: RequestSpec, cluster: ClusterProfile) -> list[dict]:
    """Team objects, the priority classes, then the request's objects: everything a fresh cluster needs, in apply
    order."""
    if team.slug != request.team:
        raise RenderError(f"Request {request.request_id} belongs to team {request.team!r}, not {team.slug!r}.")
    objects = render(request, cluster)
    # The team's admission policy (clusters without Kueue) admits this request's pods too, before they exist.
    approved = (*(a for a in team.approved if a.request_id != request.request_id),
                approved_pods(request.request_id, objects))
    return render_team(replace(team, approved=approved), cluster) + render_priority(request, cluster) + objects

"""All-or-nothing start of multi-replica training, per gang backend (reference §5-§8).

A backend contributes objects (PodGroup, Workload) and marks on the Job and its pod template:

- volcano: `scheduling.volcano.sh/v1beta1` PodGroup (minMember, minResources, the team's queue); pods use
  `schedulerName: volcano` and join the group with the annotation `scheduling.k8s.io/group-name`.
- kai: `scheduling.run.ai/v2alpha2` PodGroup (minMember, the team's leaf queue); pods use
  `schedulerName: kai-scheduler`, the queue label and the `pod-group-name` annotation. The Job (owner) and the
  pods carry `kai.scheduler/skip-podgrouper: "true"`, otherwise KAI's pod-grouper rewrites our group with its
  own (minMember 1 for a Job: no gang at all).
- kueue: the Job itself is the unit. Kueue's batch/v1 Job integration admits the whole Job (all `parallelism`
  pods) at once when its LocalQueue has quota, so the Job gets the `kueue.x-k8s.io/queue-name` label and
  `suspend: true` (Kueue unsuspends it on admission). The plain-pod group labels
  (`kueue.x-k8s.io/pod-group-name`, annotation `pod-group-total-count`) are for ownerless pods only; on pods
  owned by a Job they would make Kueue account for the same pods twice, so they are not used. Kueue gates
  admission, not placement: an all-or-nothing *start* also needs `waitForPodsReady` in Kueue's config.
- native (KEP-4671), in the shape of the cluster's minor version: 1.35 `v1alpha1` Workload + pod
  `workloadRef`; 1.36 `v1alpha2` Workload + PodGroup + pod `schedulingGroup` (both only where the cluster declares
  the alpha `GenericWorkload` and `GangScheduling` gates); 1.37 `v1beta1` Workload + PodGroup
  (`workloadRef.{workloadName, templateName}`) + pod `schedulingGroup`, only where the cluster declares
  `GenericWorkload` (off by default in 1.37; gangapi.py). 1.34 has no native gang.

Pods that need no gang (inference, development, one-replica training) on a cluster whose GPU nodes Volcano or
KAI schedule use that scheduler too (`scheduler_wiring`): two schedulers handing out the same GPUs race, and
kubelet rejects the pod that lost (volcano-sh/volcano#993). They join the team's queue as each scheduler reads
it for pods it groups itself: Volcano's PodGroup controller takes `spec.queue` from the pod annotation
`scheduling.volcano.sh/queue-name` (volcano v1.15.1 `pkg/controllers/podgroup/pg_controller_handler.go`,
`buildPodGroupFromPod`); KAI's pod-grouper from the `kai.scheduler/queue` label of the top owner, else the pod
(KAI v0.17.0 `pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go`, `CalcPodGroupQueue`).
The native Workload API works with the default scheduler, so nothing changes there.

On a Kueue cluster every GPU workload goes through the team's LocalQueue, gang or not (`kueue_wiring`): Kueue's
quota describes what is free only if every GPU pod is admitted through it (issue 23, item 7). Read at
kubernetes-sigs/kueue v0.19.2:
- Job (one-replica training): the batch/job integration, the queue-name label on the Job and `suspend: true`, as
  for a gang (`pkg/controller/jobs/job/job_webhook.go`).
- Deployment (inference, development): the `deployment` integration (`pkg/controller/jobs/deployment/
  deployment_webhook.go` Default): the queue-name label goes on the Deployment's metadata; Kueue's webhook copies
  it to the pod template with `kueue.x-k8s.io/managed` and the `suspended-by-parent` annotation, and the `pod`
  integration then admits each pod as a Workload of its own (`site/content/en/docs/tasks/run/deployment.md`: every
  pod of a Deployment is an independent plain pod; on scale-out new pods wait, gated, for quota).
- Pod templates carry the queue-name label too (what Kueue's Deployment webhook writes anyway, so server-side
  apply and Kueue agree on the field). On a Job's (or JobSet's) pods it does not make Kueue manage them a second
  time: the pod webhook leaves a pod alone when an owner up its chain is a Kueue-managed job
  (`pkg/controller/jobs/pod/pod_webhook.go` Default, `pkg/controller/jobframework/reconciler.go`
  FindAncestorJobManagedByKueue).
Kueue must run the `batch/job`, `pod` and `deployment` integrations (`integrations.frameworks` in its
Configuration, `apis/config/v1beta2/configuration_types.go`; all three are in the default
`config/components/manager/controller_manager_config.yaml`, plus `jobset.x-k8s.io/jobset` where JobSet runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu import gangapi
from gpu.vocabulary import GANG_SCHEDULERS, KAI, KUEUE, NATIVE, NO_GANG_SCHEDULER, TRAINING, VOLCANO

from .context import RenderContext
from .devices import GpuPlacement
from .errors import RenderError
from .names import child_name, team_queue_name
from .priority import kai_pod_group_fields, native_pod_group_fields, volcano_pod_group_fields
from .sizing import host_resources

BACKENDS = GANG_SCHEDULERS
POD_GROUP_TEMPLATE = "workers"  # the one pod group of a training Job (native API)

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_GROUP_ANNOTATION = "pod-group-name"
KAI_SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
SCHEDULER_NAMES = {VOLCANO: "volcano", KAI: "kai-scheduler"}

# Kueue v0.19 TAS: the pod set is admitted only into one domain of this level (site docs
# concepts/topology_aware_scheduling.md; pkg/controller/constants).
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"


def gang_topology(ctx: RenderContext) -> tuple[str, str] | None:
    """(node label key, Topology/tier name) the cluster packs gangs into, when its backend can honour it; the
    decision's `topology` reason is derived from the same rule (gangapi.topology_refusal)."""
    cluster = ctx.cluster
    key, name = cluster.gang_topology_key, cluster.gang_topology_name
    if not (key or name):
        return None
    if gangapi.topology_refusal(cluster.gang_scheduler, ctx.minor, key, name, cluster.feature_gates,
                                dra=cluster.scheduling_model == "dra"):
        return None
    return key, name


@dataclass
class GangWiring:
    objects: list[dict] = field(default_factory=list)
    job_labels: dict[str, str] = field(default_factory=dict)
    job_annotations: dict[str, str] = field(default_factory=dict)
    job_spec: dict = field(default_factory=dict)
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    pod_spec: dict = field(default_factory=dict)


def gang_wiring(
    ctx: RenderContext, job_name: str, placement: GpuPlacement, owner_kind: tuple[str, str] = ("batch", "Job")
) -> GangWiring | None:
    """The gang objects and marks for this request, or None when it asks for no gang. `job_name` is the top
    owner (Job, or JobSet of kind `owner_kind`)."""
    gang = ctx.request.gang
    if gang is None:
        return None
    _check_gang(ctx)
    if gang.backend == NATIVE:
        return _native(ctx, job_name, placement, owner_kind)
    builder = {VOLCANO: _volcano, KAI: _kai, KUEUE: _kueue}[gang.backend]
    return builder(ctx, job_name, placement)


def scheduler_wiring(ctx: RenderContext) -> GangWiring | None:
    """Marks for a pod without a gang on a cluster whose GPU nodes a gang scheduler owns, or whose GPUs Kueue's
    quota admits (module doc); None when the default scheduler places it unqueued."""
    backend = ctx.cluster.gang_scheduler
    if backend == KUEUE:
        return kueue_wiring(ctx, suspend=ctx.request.workload_class == TRAINING)
    if backend not in SCHEDULER_NAMES or not ctx.cluster.gang_scheduler_owns_gpu_nodes:
        return None
    queue = team_queue_name(ctx.request.team)
    if backend == VOLCANO:
        return GangWiring(pod_annotations={VOLCANO_QUEUE_ANNOTATION: queue},
                          pod_spec={"schedulerName": SCHEDULER_NAMES[backend]})
    return GangWiring(job_labels={KAI_QUEUE_LABEL: queue}, pod_labels={KAI_QUEUE_LABEL: queue},
                      pod_spec={"schedulerName": SCHEDULER_NAMES[backend]})


def _check_gang(ctx: RenderContext) -> None:
    request, cluster, gang = ctx.request, ctx.cluster, ctx.request.gang
    if gang.backend == NO_GANG_SCHEDULER or cluster.gang_scheduler == NO_GANG_SCHEDULER:
        raise RenderError(
            f"Request {request.name} needs gang scheduling but cluster {cluster.name} has no gang scheduler "
            "(gang_scheduler 'none'): some replicas could hold GPUs while others wait. Place it on a cluster with "
            "Volcano, KAI, Kueue or the native Workload API, or ask for one replica."
        )
    if gang.backend not in BACKENDS:
        raise RenderError(f"Unknown gang backend {gang.backend!r}; expected one of {', '.join(BACKENDS)}.")
    if gang.backend != cluster.gang_scheduler:
        raise RenderError(
            f"The request was decided for gang backend {gang.backend!r} but cluster {cluster.name} runs "
            f"{cluster.gang_scheduler!r}; re-run placement."
        )
    if request.workload_class != TRAINING:
        raise RenderError(f"Gang scheduling applies to training Jobs only; this is a {request.workload_class} request.")
    if not 1 <= gang.min_members <= request.replicas:
        raise RenderError(
            f"Gang minimum {gang.min_members} must be between 1 and the number of replicas ({request.replicas})."
        )


# --- Volcano ---------------------------------------------------------------------------------------------------


def build_volcano_pod_group(ctx: RenderContext, name: str, placement: GpuPlacement) -> dict:
    members = ctx.request.gang.min_members
    host = host_resources(ctx.request)
    # The minimum the gang needs in aggregate; Volcano will not start any pod until it fits the queue.
    min_resources = {"cpu": str(host.cpu * members), "memory": f"{host.memory_gi * members}Gi"}
    if placement.gpu_resource:
        min_resources[placement.gpu_resource] = str(ctx.request.gpus_per_replica * members)
    spec = {"minMember": members, "minResources": min_resources, "queue": team_queue_name(ctx.request.team)}
    if topology := gang_topology(ctx):
        # HyperNode tiers (volcano v1.15.1 PodGroup CRD networkTopology): hard = never cross that tier.
        spec["networkTopology"] = {"mode": "hard", "highestTierName": topology[1]}
    priority_spec, priority_annotations = volcano_pod_group_fields(ctx)
    spec.update(priority_spec)
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": ctx.metadata(name, annotations=priority_annotations or None),
        "spec": spec,
    }


def _volcano(ctx: RenderContext, job_name: str, placement: GpuPlacement) -> GangWiring:
    return GangWiring(
        objects=[build_volcano_pod_group(ctx, job_name, placement)],
        pod_annotations={VOLCANO_GROUP_ANNOTATION: job_name},
        pod_spec={"schedulerName": SCHEDULER_NAMES[VOLCANO]},
    )


# --- KAI -------------------------------------------------------------------------------------------------------


def build_kai_pod_group(ctx: RenderContext, name: str) -> dict:
    spec = {"minMember": ctx.request.gang.min_members, "queue": team_queue_name(ctx.request.team)}
    if topology := gang_topology(ctx):
        # KAI v0.17 PodGroup CRD topologyConstraint: a level (node label) of a kai.scheduler/v1alpha1 Topology.
        spec["topologyConstraint"] = {"topology": topology[1], "requiredTopologyLevel": topology[0]}
    spec.update(kai_pod_group_fields(ctx))
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": ctx.metadata(name),
        "spec": spec,
    }


def _kai(ctx: RenderContext, job_name: str, placement: GpuPlacement) -> GangWiring:
    queue = team_queue_name(ctx.request.team)
    return GangWiring(
        objects=[build_kai_pod_group(ctx, job_name)],
        job_labels={KAI_QUEUE_LABEL: queue},
        job_annotations={KAI_SKIP_PODGROUPER: "true"},
        pod_labels={KAI_QUEUE_LABEL: queue},
        pod_annotations={KAI_GROUP_ANNOTATION: job_name, KAI_SKIP_PODGROUPER: "true"},
        pod_spec={"schedulerName": SCHEDULER_NAMES[KAI]},
    )


# --- Kueue -----------------------------------------------------------------------------------------------------


def kueue_wiring(ctx: RenderContext, *, suspend: bool) -> GangWiring:
    """The team's LocalQueue on the workload and its pods (module doc); a Job is also created suspended (Kueue
    unsuspends it on admission). A Deployment has no `suspend`: Kueue gates its pods instead."""
    queue = {KUEUE_QUEUE_LABEL: team_queue_name(ctx.request.team)}
    return GangWiring(job_labels=dict(queue), job_spec={"suspend": True} if suspend else {}, pod_labels=dict(queue))


def _kueue(ctx: RenderContext, job_name: str, placement: GpuPlacement) -> GangWiring:
    # No partial admission (`kueue.x-k8s.io/job-min-parallelism`): on an Indexed Job it lowers parallelism but
    # keeps completions, so the missing ranks would run later, one after another: never a gang. Kueue admits
    # all replicas at once, which also satisfies a gang minimum below the replica count.
    topology = gang_topology(ctx)
    wiring = kueue_wiring(ctx, suspend=True)
    wiring.pod_annotations = {KUEUE_REQUIRED_TOPOLOGY: topology[0]} if topology else {}
    return wiring


# --- native Workload API ---------------------------------------------------------------------------------------


def _gang_policy(ctx: RenderContext) -> dict:
    return {"gang": {"minCount": ctx.request.gang.min_members}}


def _controller_ref(job_name: str, owner_kind: tuple[str, str] = ("batch", "Job")) -> dict:
    return {"apiGroup": owner_kind[0], "kind": owner_kind[1], "name": job_name}


def build_workload_v1alpha1(ctx: RenderContext, name: str, job_name: str,
                            owner_kind: tuple[str, str] = ("batch", "Job")) -> dict:
    """Kubernetes 1.35."""
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": ctx.metadata(name),
        "spec": {
            "controllerRef": _controller_ref(job_name, owner_kind),
            "podGroups": [{"name": POD_GROUP_TEMPLATE, "policy": _gang_policy(ctx)}],
        },
    }


def build_workload(ctx: RenderContext, name: str, job_name: str, api_version: str,
                   owner_kind: tuple[str, str] = ("batch", "Job")) -> dict:
    """Kubernetes 1.36 (`v1alpha2`) and 1.37 (`v1beta1`): same Workload shape, pod groups are templates."""
    return {
        "apiVersion": api_version,
        "kind": "Workload",
        "metadata": ctx.metadata(name),
        "spec": {
            "controllerRef": _controller_ref(job_name, owner_kind),
            "podGroupTemplates": [{"name": POD_GROUP_TEMPLATE, "schedulingPolicy": _gang_policy(ctx),
                                   **_native_constraints(ctx), **native_pod_group_fields(ctx)}],
        },
    }


def build_native_pod_group(ctx: RenderContext, name: str, workload_name: str) -> dict:
    """The PodGroup pods point at (1.36+); its reference to the Workload was renamed in v1beta1."""
    if ctx.minor == 36:
        api_version = "scheduling.k8s.io/v1alpha2"
        reference = {
            "podGroupTemplateRef": {
                "workload": {"workloadName": workload_name, "podGroupTemplateName": POD_GROUP_TEMPLATE}
            }
        }
    else:
        api_version = "scheduling.k8s.io/v1beta1"
        reference = {"workloadRef": {"workloadName": workload_name, "templateName": POD_GROUP_TEMPLATE}}
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": ctx.metadata(name),
        "spec": {**reference, "schedulingPolicy": _gang_policy(ctx), **_native_constraints(ctx),
                 **native_pod_group_fields(ctx)},
    }


def _native_constraints(ctx: RenderContext) -> dict:
    """schedulingConstraints.topology (v1alpha2/v1beta1 PodGroupSchedulingConstraints; gate
    TopologyAwareWorkloadScheduling): the scheduler keeps the whole PodGroup inside one domain of the key."""
    topology = gang_topology(ctx)
    return {"schedulingConstraints": {"topology": [{"key": topology[0]}]}} if topology else {}


def _native(ctx: RenderContext, job_name: str, placement: GpuPlacement, owner_kind: tuple[str, str]) -> GangWiring:
    workload_name = job_name
    refusal = gangapi.native_gang_refusal(ctx.minor, ctx.cluster.feature_gates, ctx.cluster.name)
    if refusal:
        raise RenderError(refusal)
    if ctx.minor == 35:
        return GangWiring(
            objects=[build_workload_v1alpha1(ctx, workload_name, job_name, owner_kind)],
            pod_spec={"workloadRef": {"name": workload_name, "podGroup": POD_GROUP_TEMPLATE}},
        )
    api_version = gangapi.NATIVE_API_VERSION[ctx.minor]
    group_name = child_name(job_name, POD_GROUP_TEMPLATE)
    return GangWiring(
        objects=[
            build_workload(ctx, workload_name, job_name, api_version, owner_kind),
            build_native_pod_group(ctx, group_name, workload_name),
        ],
        pod_spec={"schedulingGroup": {"podGroupName": group_name}},
    )

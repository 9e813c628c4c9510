"""Priority, preemption and checkpoint grace of a request, rendered for each scheduling backend from the decision's
priority (docs/preemption.md). Nothing is rendered for a request without one: it inherits the scheduler's defaults.

Every backend:
- a `scheduling.k8s.io/v1` PriorityClass per tier (cluster-scoped, outlives requests: no request label), its value
  the tier's, `preemptionPolicy: Never` where the class must never preempt (kubernetes v1.34-v1.37
  `staging/src/k8s.io/api/scheduling/v1/types.go` PriorityClass; `core/v1` PreemptionPolicy). It carries the
  checkpoint grace its pods are promised (contract CHECKPOINT_GRACE), which the semantic checker holds them to;
- pods: `priorityClassName` and `terminationGracePeriodSeconds` (the SIGTERM-to-SIGKILL window).

Per backend:
- volcano (v1.15.1): the PodGroup's `spec.priorityClassName` (PodGroup CRD); pods and PodGroup annotated
  `volcano.sh/preemptable` (`staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/labels.go` PodPreemptable,
  read by `pkg/scheduler/api/pod_info.go` GetPodPreemptable and `job_info.go` extractPreemptable), and a minimum
  runtime as the pod annotation `volcano.sh/cooldown-time` (same file, CooldownTime; `pkg/scheduler/plugins/cdp/
  cdp.go` skips victims running for less, when the cdp plugin is enabled).
- kai (v0.17.0): the PodGroup's `spec.priorityClassName` and `spec.preemptibility` (`preemptible|non-preemptible`,
  PodGroup CRD); pods without our PodGroup get theirs from the pod-grouper, which reads the pod's
  `priorityClassName` and the label `kai.scheduler/preemptibility` on the top owner, then the pod
  (`pkg/podgrouper/podgrouper/plugins/constants/constants.go` PreemptibilityLabelKey, `defaultgrouper/
  default_grouper.go` calcPodGroupPreemptibilityWithDefaults). KAI treats values >= 100 as non-preemptible unless
  told (`docs/priority/README.md`), so the label is always written.
- kueue (v0.19.2): a `kueue.x-k8s.io/v1beta2` WorkloadPriorityClass of the same name and value (CRD
  `config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml`), named by the Job's label
  `kueue.x-k8s.io/priority-class` (`pkg/controller/constants/constants.go` WorkloadPriorityClassLabel): Kueue
  preempts admitted Workloads by it; the pods' PriorityClass still orders the default scheduler.
- native Workload API (KEP-4671): 1.35's v1alpha1 Workload has no priority; 1.36's v1alpha2 PodGroup and pod group
  template have `priorityClassName` behind the alpha gate WorkloadAwarePreemption (written only where the cluster
  declares it); 1.37's v1beta1 adds `preemptionPolicy`, the gate merged into GenericWorkload (kubernetes-validate
  1.36.0/1.37.0 schemas `io.k8s.api.scheduling.v1alpha2.PodGroupSpec`, `v1beta1.PodGroupSpec`).
"""

from __future__ import annotations

from gpu import gangapi
from gpu.vocabulary import KAI, KUEUE, PRIORITY_TIER_WORDS, VOLCANO

from ..contract import CHECKPOINT_GRACE, domain_key
from .context import RenderContext
from .labels import platform_labels
from .spec import PrioritySpec

CLASS_PREFIX = "gpu-portal-"
NEVER, PREEMPT_LOWER = "Never", "PreemptLowerPriority"
VOLCANO_PREEMPTABLE = "volcano.sh/preemptable"
VOLCANO_COOLDOWN = "volcano.sh/cooldown-time"
KAI_PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
KUEUE_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


def priority_class_name(priority: PrioritySpec) -> str:
    """One class per tier; a tier that must never preempt is a class of its own (preemptionPolicy is the class's)."""
    return f"{CLASS_PREFIX}{priority.tier}" + ("" if priority.preempts else "-never-preempts")


def preemption_policy(priority: PrioritySpec) -> str:
    return PREEMPT_LOWER if priority.preempts else NEVER


def build_priority_class(ctx: RenderContext, priority: PrioritySpec) -> dict:
    words = PRIORITY_TIER_WORDS.get(priority.tier, priority.tier)
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": priority_class_name(priority), "labels": platform_labels(ctx.cluster, "gpu-priority"),
                     "annotations": {domain_key(ctx.domain, CHECKPOINT_GRACE): str(priority.grace_seconds)}},
        "value": priority.value,
        "globalDefault": False,
        "preemptionPolicy": preemption_policy(priority),
        "description": f"GPU portal tier {words}, decided by the routing policy (docs/preemption.md).",
    }


def build_workload_priority_class(ctx: RenderContext, priority: PrioritySpec) -> dict:
    words = PRIORITY_TIER_WORDS.get(priority.tier, priority.tier)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": priority_class_name(priority), "labels": platform_labels(ctx.cluster, "gpu-priority")},
        "value": priority.value,
        "description": f"GPU portal tier {words}: Kueue admits and preempts Workloads by it.",
    }


def kueue_manages(ctx: RenderContext) -> bool:
    """Kueue admits the request's Job (a gang on a Kueue cluster: gang.py `_kueue`)."""
    return ctx.request.gang is not None and ctx.request.gang.backend == KUEUE


def priority_objects(ctx: RenderContext) -> list[dict]:
    """The cluster-scoped classes the request's pods and Workload name, applied before them."""
    priority = ctx.request.priority
    if priority is None:
        return []
    objects = [build_priority_class(ctx, priority)]
    if kueue_manages(ctx):
        objects.append(build_workload_priority_class(ctx, priority))
    return objects


def _minimum_runtime(priority: PrioritySpec) -> str | None:
    if priority.preemptible and priority.min_runtime_minutes:
        return f"{priority.min_runtime_minutes * 60}s"
    return None


def kai_preemptibility(priority: PrioritySpec) -> str:
    return "preemptible" if priority.preemptible else "non-preemptible"


def pod_priority(ctx: RenderContext) -> tuple[dict, dict, dict]:
    """(labels, annotations, spec fields) of the request's pods."""
    priority = ctx.request.priority
    if priority is None:
        return {}, {}, {}
    spec = {"priorityClassName": priority_class_name(priority), "terminationGracePeriodSeconds": priority.grace_seconds}
    labels, annotations = {}, {}
    backend = ctx.cluster.gang_scheduler
    if backend == VOLCANO:
        annotations[VOLCANO_PREEMPTABLE] = "true" if priority.preemptible else "false"
        if cooldown := _minimum_runtime(priority):
            annotations[VOLCANO_COOLDOWN] = cooldown
    elif backend == KAI:
        labels[KAI_PREEMPTIBILITY_LABEL] = kai_preemptibility(priority)
    return labels, annotations, spec


def owner_labels(ctx: RenderContext) -> dict[str, str]:
    """Labels of the pods' top owner (Job, JobSet, Deployment): KAI's pod-grouper reads the owner's first; Kueue
    reads the WorkloadPriorityClass label on the Job it admits."""
    priority = ctx.request.priority
    if priority is None:
        return {}
    if ctx.cluster.gang_scheduler == KAI:
        return {KAI_PREEMPTIBILITY_LABEL: kai_preemptibility(priority)}
    if kueue_manages(ctx):
        return {KUEUE_PRIORITY_CLASS_LABEL: priority_class_name(priority)}
    return {}


def volcano_pod_group_fields(ctx: RenderContext) -> tuple[dict, dict]:
    """(spec fields, annotations) of a Volcano PodGroup."""
    priority = ctx.request.priority
    if priority is None:
        return {}, {}
    return ({"priorityClassName": priority_class_name(priority)},
            {VOLCANO_PREEMPTABLE: "true" if priority.preemptible else "false"})


def kai_pod_group_fields(ctx: RenderContext) -> dict:
    priority = ctx.request.priority
    if priority is None:
        return {}
    return {"priorityClassName": priority_class_name(priority), "preemptibility": kai_preemptibility(priority)}


def native_pod_group_fields(ctx: RenderContext) -> dict:
    """Priority of a native PodGroup (and its template), where the cluster's API serves and honours it."""
    priority = ctx.request.priority
    if priority is None or ctx.minor < 36:
        return {}
    if ctx.minor == 36:
        if gangapi.WORKLOAD_AWARE_PREEMPTION not in set(ctx.cluster.feature_gates):
            return {}
        return {"priorityClassName": priority_class_name(priority)}
    return {"priorityClassName": priority_class_name(priority), "preemptionPolicy": preemption_policy(priority)}

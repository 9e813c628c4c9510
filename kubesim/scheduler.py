"""The simulated scheduler's filter: which nodes can take a pod, and the message kube-scheduler writes when none can.

The simple version of kube-scheduler's filter plugins: NodeUnschedulable (cordoned nodes), NodeAffinity
(`spec.nodeSelector` and required node affinity terms), TaintToleration (NoSchedule / NoExecute taints) and
NodeResourcesFit for the extended resources a pod asks for (nvidia.com/gpu, MIG profiles, shared GPUs) and the pod
count; DRA claims are kubesim.dra's, preemption kubesim.preemption's. Pod (anti-)affinity, topology spread, CPU
and memory are not simulated. Pure functions over plain dicts: no server, no clock.

The reasons and the message follow kube-scheduler's wording (kubernetes/kubernetes v1.35,
pkg/scheduler/framework/types.go `FitError.Error`, and the plugins' `ErrReason*` strings under
pkg/scheduler/framework/plugins/): "0/N nodes are available: <count> <reason>, ... preemption: ...".
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TERMINAL_PHASES = ("Succeeded", "Failed")
SCHEDULED_EFFECTS = ("NoSchedule", "NoExecute")
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
# Where the stalled-gang scenario's GPU holders run: not a team's namespace, so no request, quota or chargeback.
BURN_IN_NAMESPACE = "gpu-burn-in"


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """Extended resources a pod asks for (limits, else requests, summed over its containers); CPU and memory are
    left out on purpose: the simulator only counts the devices."""
    totals: Counter[str] = Counter()
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        for name, value in asked.items():
            if "/" in name and str(value).isdigit():
                totals[name] += int(value)
    return dict(totals)


def allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    raw = (node.get("status") or {}).get("allocatable") or {}
    return {name: int(value) for name, value in raw.items() if str(value).isdigit()}


def used_on_nodes(pods: Iterable[Mapping[str, Any]]) -> dict[str, Counter]:
    """What the bound, unfinished pods hold on each node (their extended resources and one `pods` each)."""
    used: dict[str, Counter] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        held = used.setdefault(node, Counter())
        held.update(pod_requests(pod))
        held["pods"] += 1
    return used


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            actual, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def matches_node_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """spec.nodeSelector (every label equal) and the required node affinity (any term, all its expressions)."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(key) != value for key, value in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_expression_matches(e, labels) for e in term.get("matchExpressions") or []) for term in terms)


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(pod: Mapping[str, Any], node: Mapping[str, Any]) -> dict | None:
    """The first NoSchedule/NoExecute taint of the node that none of the pod's tolerations tolerates."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in SCHEDULED_EFFECTS or taint.get("key") == "node.kubernetes.io/unschedulable":
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def rejection(pod: Mapping[str, Any], node: Mapping[str, Any], used: Mapping[str, int]) -> list[str]:
    """Why the node cannot take the pod now (empty when it can), in kube-scheduler's words."""
    if (node.get("spec") or {}).get("unschedulable"):
        return [REASON_UNSCHEDULABLE]
    if not matches_node_affinity(pod, node):
        return [REASON_AFFINITY]
    taint = untolerated_taint(pod, node)
    if taint:
        return [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"]
    free = allocatable(node)
    wanted = {**pod_requests(pod), "pods": 1}
    return [f"Insufficient {name}" for name, count in sorted(wanted.items())
            if free.get(name, 0) - used.get(name, 0) < count]


def pick_node(pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
              used: Mapping[str, Mapping[str, int]]) -> str | None:
    """The node to bind to: the feasible node with the fewest free devices left afterwards (bin packing, so that
    whole nodes stay free for the next gang), by name when tied; None when no node fits."""
    wanted = pod_requests(pod)
    feasible = []
    for node in nodes:
        name = node["metadata"]["name"]
        if rejection(pod, node, used.get(name, {})):
            continue
        free = allocatable(node)
        left = sum(free.get(r, 0) - used.get(name, {}).get(r, 0) - n for r, n in wanted.items())
        feasible.append((left, name))
    return min(feasible)[1] if feasible else None


def unschedulable_message(pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]],
                          used: Mapping[str, Mapping[str, int]]) -> str:
    """kube-scheduler's FitError text: each reason with the number of nodes it rejected, sorted."""
    counts: Counter[str] = Counter()
    for node in nodes:
        for reason in rejection(pod, node, used.get(node["metadata"]["name"], {})):
            counts[reason] += 1
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
    total = len(nodes)
    return (f"0/{total} nodes are available: {reasons}. preemption: 0/{total} nodes are available: "
            f"{total} Preemption is not helpful for scheduling.")


def burn_in_pod(node: str, resources: Mapping[str, int], *, suffix: str, at: str) -> dict[str, Any]:
    """A GPU burn-in pod of no team, bound to `node` by hand (no scheduler), holding `resources` there: what the
    stalled-gang scenario puts where its last rank would fit, so that the inventory sees the GPUs taken too."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"burn-in-{node}-{suffix}", "namespace": BURN_IN_NAMESPACE,
                         "labels": {"app": "gpu-burn-in"}},
            "spec": {"nodeName": node, "containers": [{
                "name": "burn-in", "image": "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04",
                "resources": {"limits": {r: str(n) for r, n in resources.items()}}}]},
            "status": {"phase": "Pending", "qosClass": "Burstable", "conditions": [
                {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": at}]}}

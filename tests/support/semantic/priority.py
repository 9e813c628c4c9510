"""The priority rule: every priority class a pod, PodGroup, Workload or Kueue Job names exists on the cluster or is
rendered with it, a Kueue WorkloadPriorityClass and the pods' PriorityClass of the same name agree on the value,
and a pod gets at least the checkpoint grace its class promises (docs/preemption.md).

- Kubernetes v1.34-v1.37: a pod naming a PriorityClass that does not exist is rejected at admission by the Priority
  admission plugin (kubernetes `plugin/pkg/admission/priority/admission.go`, the pod's class is looked up by name);
  `system-node-critical` and `system-cluster-critical` always exist. A PodGroup's `spec.priorityClassName`
  (Volcano v1.15.1, KAI v0.17.0, native v1alpha2/v1beta1) names a PriorityClass too.
- Kueue v0.19.2: a Job labelled `kueue.x-k8s.io/priority-class` with no such WorkloadPriorityClass gets no Workload
  (`pkg/util/priority/priority.go` GetPriorityFromWorkloadPriorityClass returns the Get's NotFound error).
- The grace: `terminationGracePeriodSeconds` (Kubernetes' default 30 when unset) at least the seconds the class
  promises (provisioning.contract CHECKPOINT_GRACE on the PriorityClass).
"""

from __future__ import annotations

from provisioning.contract import CHECKPOINT_GRACE

from .base import CheckerBase, PodSet

SYSTEM_CLASSES = frozenset({"system-node-critical", "system-cluster-critical"})
KUEUE_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_GRACE = 30


def promised_grace(priority_class: dict) -> int | None:
    for key, value in ((priority_class.get("metadata") or {}).get("annotations") or {}).items():
        if key.endswith("/" + CHECKPOINT_GRACE):
            return int(value)
    return None


class PriorityRules(CheckerBase):
    def _classes(self, kind: str, on_cluster) -> dict[str, dict]:
        found = {c["metadata"]["name"]: c for c in on_cluster}
        for obj in self.by_kind.get(kind, []):
            self.examined(obj)
            found[obj["metadata"]["name"]] = obj
        return found

    def check_priority(self) -> None:
        classes = self._classes("PriorityClass", self.inventory.priority_classes)
        workload_classes = self._classes("WorkloadPriorityClass", self.inventory.workload_priority_classes)
        for pods in self.workloads():
            self._check_pods(pods, classes)
        for group in self.by_kind.get("PodGroup", []) + self.by_kind.get("Workload", []):
            spec = group.get("spec") or {}
            named = [spec.get("priorityClassName")] + [t.get("priorityClassName")
                                                       for t in spec.get("podGroupTemplates") or []]
            for name in filter(None, named):
                if name not in classes and name not in SYSTEM_CLASSES:
                    self.problem("priority", group, f"priorityClassName {name!r}: no such PriorityClass on the "
                                                    "cluster or in the set; the scheduler cannot order the group.")
        for owner in self.by_kind.get("Job", []) + self.by_kind.get("JobSet", []):
            name = (owner["metadata"].get("labels") or {}).get(KUEUE_PRIORITY_CLASS_LABEL)
            if name is None:
                continue
            if name not in workload_classes:
                self.problem("priority", owner, f"{KUEUE_PRIORITY_CLASS_LABEL}={name}: no such WorkloadPriorityClass;"
                                                " Kueue creates no Workload for it.")
            elif name in classes and workload_classes[name]["value"] != classes[name]["value"]:
                self.problem("priority", owner, f"WorkloadPriorityClass {name} ({workload_classes[name]['value']}) "
                                                f"and PriorityClass {name} ({classes[name]['value']}) disagree: "
                                                "Kueue and the scheduler would order the work differently.")

    def _check_pods(self, pods: PodSet, classes: dict[str, dict]) -> None:
        spec = pods.template.get("spec") or {}
        name = spec.get("priorityClassName")
        if name is None:
            return
        if name not in classes:
            if name not in SYSTEM_CLASSES:
                self.problem("priority", pods.workload, f"priorityClassName {name!r}: no such PriorityClass on the "
                                                        "cluster or in the set; the API server rejects the pods.")
            return
        promised = promised_grace(classes[name])
        grace = spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE)
        if promised is not None and grace < promised:
            self.problem("priority", pods.workload, f"terminationGracePeriodSeconds {grace} is less than the "
                                                    f"{promised} seconds class {name} promises to checkpoint.")

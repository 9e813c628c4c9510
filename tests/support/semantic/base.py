"""The checker's state: the object set by kind, the cluster's classes and slices, and the workloads' pod templates."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Admitted, Inventory, SemanticProblem, SemanticReport, object_ref


@dataclass
class PodSet:
    """One pod template and how many pods its workload runs."""

    workload: dict
    template: dict
    count: int


class CheckerBase:
    def __init__(self, objects: list[dict], inventory: Inventory, admitted: Admitted, report: SemanticReport):
        self.objects, self.inventory, self.admitted, self.report = objects, inventory, admitted, report
        self.by_kind: dict[str, list[dict]] = {}
        for obj in objects:
            self.by_kind.setdefault(obj["kind"], []).append(obj)
        self.classes = {c["metadata"]["name"]: c for c in inventory.device_classes}
        self.slices_by_node: dict[str, list[dict]] = {}
        for resource_slice in inventory.resource_slices:
            self.slices_by_node.setdefault(resource_slice["spec"].get("nodeName", ""), []).append(resource_slice)

    def problem(self, rule: str, obj: dict, message: str) -> None:
        self.report.problems.append(SemanticProblem(rule, object_ref(obj), message))

    def examined(self, obj: dict) -> None:
        self.report.checked.add(id(obj))

    def names(self, kind: str, api_group: str | None = None) -> set[str]:
        return {
            o["metadata"]["name"]
            for o in self.by_kind.get(kind, [])
            if api_group is None or o["apiVersion"].startswith(api_group)
        }



    def workloads(self) -> list[PodSet]:
        found = []
        for obj in self.objects:
            kind, spec = obj["kind"], obj.get("spec", {})
            if kind == "Job":
                found.append(PodSet(obj, spec["template"], int(spec.get("parallelism", 1))))
            elif kind in ("Deployment", "StatefulSet"):
                found.append(PodSet(obj, spec["template"], int(spec.get("replicas", 1))))
            elif kind == "JobSet":
                for replicated in spec.get("replicatedJobs", []):
                    job_spec = replicated["template"]["spec"]
                    count = int(replicated.get("replicas", 1)) * int(job_spec.get("parallelism", 1))
                    found.append(PodSet(obj, job_spec["template"], count))
            elif kind == "Pod":
                found.append(PodSet(obj, {"metadata": obj["metadata"], "spec": spec}, 1))
        return found

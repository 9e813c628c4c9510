"""Rules on each workload's pods: scheduler, node selection, tolerations, extended resources, claims, devices."""

from __future__ import annotations

from .base import CheckerBase, PodSet
from .cel import CelError, selected_devices
from .model import (
    CHANNEL_DEVICE_CLASS,
    COMPUTE_DOMAIN_CRD,
    DEFAULT_SCHEDULER,
    EXTENDED_RESOURCE_MINOR,
    GPU_PRESENT_LABEL,
    KUEUE_QUEUE_LABEL,
    STANDARD_RESOURCES,
)
from .placement import unmet_requirements, node_matches, untolerated


class PodRules(CheckerBase):
    def check_pods(self, pods: PodSet) -> list[dict]:
        """The pod rules; returns the nodes the pods can land on (none when selection or taints exclude them all)."""
        pod, workload = pods.template["spec"], pods.workload
        nodes = self.inventory.nodes
        matching = [n for n in nodes if node_matches(pod, n)]
        if not matching:
            unmet = unmet_requirements(pod, nodes) or ["the combination of the node selector and node affinity"]
            self.problem(
                "node-selection", workload,
                f"no node of the cluster ({len(nodes)} nodes) matches the pod's node selection; no node has "
                f"{'; '.join(unmet)}.",
            )  # fmt: skip
            return []
        placeable = [n for n in matching if not untolerated(pod, n)]
        if not placeable:
            taints = sorted({f"{t['key']}={t.get('value', '')}:{t['effect']}" for n in matching for t in untolerated(pod, n)})
            self.problem(
                "tolerations", workload,
                f"every node matching the pod's selection ({len(matching)}) has a taint the pod does not tolerate: "
                f"{', '.join(taints)}.",
            )  # fmt: skip
            return []
        self.check_scheduler(pod, workload, placeable)
        self.check_extended_resources(pods, placeable)
        self.check_claims(pods, placeable)
        return placeable

    def scheduler_of(self, node: dict) -> str:
        labels = node["metadata"].get("labels", {})
        allocatable = node.get("status", {}).get("allocatable", {})
        gpu = (
            labels.get(GPU_PRESENT_LABEL) == "true"
            or any(k.startswith("nvidia.com/") and str(v) != "0" for k, v in allocatable.items())
            or node["metadata"]["name"] in self.slices_by_node
        )
        return self.inventory.gpu_node_scheduler if gpu else DEFAULT_SCHEDULER

    def check_scheduler(self, pod: dict, workload: dict, placeable: list[dict]) -> None:
        scheduler = pod.get("schedulerName") or DEFAULT_SCHEDULER
        others = sorted({self.scheduler_of(n) for n in placeable} - {scheduler})
        if others:
            self.problem(
                "scheduler", workload,
                f"the pods use {scheduler}, but the nodes they can land on are scheduled by {', '.join(others)}: "
                "two schedulers would hand out the same GPUs and kubelet rejects the pod that lost.",
            )  # fmt: skip

    def check_extended_resources(self, pods: PodSet, placeable: list[dict]) -> None:
        for container in pods.template["spec"].get("containers", []):
            for resource, amount in (container.get("resources", {}).get("limits") or {}).items():
                if resource in STANDARD_RESOURCES or resource.startswith(("hugepages-", "requests.")):
                    continue
                if "/" not in resource or resource.startswith("kubernetes.io/"):
                    continue
                self._check_extended(pods, resource, int(amount), placeable)

    def _check_extended(self, pods: PodSet, resource: str, amount: int, placeable: list[dict]) -> None:
        advertised = {n["metadata"]["name"]: int(n.get("status", {}).get("allocatable", {}).get(resource, 0))
                      for n in placeable}  # fmt: skip
        if any(v > 0 for v in advertised.values()):
            fitting = [v for v in advertised.values() if v >= amount]
            if not fitting:
                self.problem(
                    "extended-resources", pods.workload,
                    f"each pod asks for {amount} {resource}; no node it can land on has that many allocatable "
                    f"(most: {max(advertised.values())}).",
                )  # fmt: skip
            elif sum(v // amount for v in fitting) < pods.count:
                self.problem(
                    "extended-resources", pods.workload,
                    f"{pods.count} pods of {amount} {resource} need more than the {sum(fitting)} the nodes they can "
                    "land on have: the workload can never run whole.",
                )  # fmt: skip
            return
        classes = [c for c in self.classes.values() if c.get("spec", {}).get("extendedResourceName") == resource]
        if classes and pods.template["spec"].get("schedulerName") == "volcano":
            # volcano v1.15.1 pkg/scheduler/api/node_info.go (node resources from status.allocatable only) and
            # actions/allocate/allocate.go predicate (InitResreq.LessEqualWithResourcesName(FutureIdle)).
            self.problem(
                "extended-resources", pods.workload,
                f"the pods use Volcano, which fits {resource} against node allocatable only, and no node it can land "
                f"on advertises it (DeviceClass {classes[-1]['metadata']['name']} serves it from DRA): they never fit.",
            )  # fmt: skip
            return
        minor, gates = self.inventory.kubernetes_minor, self.inventory.feature_gates
        if classes and minor is not None and minor < EXTENDED_RESOURCE_MINOR and "DRAExtendedResource" not in gates:
            self.problem(
                "extended-resources", pods.workload,
                f"{resource} is declared only by DeviceClass {classes[-1]['metadata']['name']} (extendedResourceName), "
                f"but DRAExtendedResource is alpha and off on Kubernetes 1.{minor}: no node advertises it.",
            )  # fmt: skip
            return
        if classes:
            request = {"deviceClassName": classes[-1]["metadata"]["name"], "count": amount, "selectors": []}
            self._check_devices(pods, request, placeable, rule="extended-resources")
            return
        self.problem(
            "extended-resources", pods.workload,
            f"{resource} is advertised by no node the pods can land on and declared by no DeviceClass "
            "(extendedResourceName): the pods would stay Pending.",
        )  # fmt: skip

    def check_claims(self, pods: PodSet, placeable: list[dict]) -> None:
        pod, workload = pods.template["spec"], pods.workload
        templates = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaimTemplate", [])}
        claims = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaim", [])}
        channels = {
            cd["spec"]["channel"]["resourceClaimTemplate"]["name"]: cd for cd in self.by_kind.get("ComputeDomain", [])
        }
        kueue = KUEUE_QUEUE_LABEL in workload["metadata"].get("labels", {})
        declared = set()
        for entry in pod.get("resourceClaims") or []:
            declared.add(entry["name"])
            if entry.get("resourceClaimName"):
                name = entry["resourceClaimName"]
                if kueue:
                    self.problem(
                        "claims", workload,
                        f"the pods name ResourceClaim {name}; Kueue admits only pods whose claims come from "
                        "ResourceClaimTemplates, so the Job would never be admitted.",
                    )  # fmt: skip
                if name not in claims:
                    self.problem("claims", workload, f"the pods name ResourceClaim {name}, which the set lacks.")
                else:
                    self.examined(claims[name])
                    self.check_claim_spec(pods, claims[name], claims[name]["spec"], placeable, shared=True)
                continue
            name = entry.get("resourceClaimTemplateName", "")
            if name in templates:
                self.examined(templates[name])
                self.check_claim_spec(pods, templates[name], templates[name]["spec"]["spec"], placeable, shared=False)
            elif name in channels:
                self.examined(channels[name])
                self.check_channel(channels[name])
            else:
                self.problem(
                    "claims", workload,
                    f"the pods' claim {entry['name']} names ResourceClaimTemplate {name!r}, which neither the set "
                    "nor a ComputeDomain of the set provides: the pods could not be created.",
                )  # fmt: skip
        for container in pod.get("containers", []):
            for claim in container.get("resources", {}).get("claims") or []:
                if claim["name"] not in declared:
                    self.problem(
                        "claims", workload,
                        f"container {container['name']} uses claim {claim['name']!r}, which the pod does not declare.",
                    )  # fmt: skip

    def check_channel(self, compute_domain: dict) -> None:
        if COMPUTE_DOMAIN_CRD not in self.inventory.crds:
            self.problem(
                "claims", compute_domain,
                f"the cluster does not serve {COMPUTE_DOMAIN_CRD} (the NVIDIA DRA driver's ComputeDomains).",
            )  # fmt: skip
        if CHANNEL_DEVICE_CLASS not in self.classes:
            self.problem(
                "device-classes", compute_domain,
                f"its IMEX channel claims need DeviceClass {CHANNEL_DEVICE_CLASS}, which the cluster lacks.",
            )  # fmt: skip

    def check_claim_spec(self, pods: PodSet, claim: dict, spec: dict, placeable: list[dict], *, shared: bool) -> None:
        for request in spec.get("devices", {}).get("requests", []):
            exactly = request.get("exactly") or request
            class_name = exactly.get("deviceClassName")
            if class_name not in self.classes:
                self.problem(
                    "device-classes", claim,
                    f"request {request['name']} asks DeviceClass {class_name!r}, which the cluster does not have "
                    f"(it has: {', '.join(sorted(self.classes)) or 'none'}).",
                )  # fmt: skip
                continue
            wanted = {"deviceClassName": class_name, "count": int(exactly.get("count", 1)),
                      "selectors": exactly.get("selectors") or []}  # fmt: skip
            self._check_devices(pods, wanted, placeable, rule="devices", subject=claim, shared=shared)

    def _check_devices(self, pods: PodSet, request: dict, placeable: list[dict], *, rule: str,
                       subject: dict | None = None, shared: bool = False) -> None:  # fmt: skip
        subject = subject or pods.workload
        device_class = self.classes[request["deviceClassName"]]
        expressions = [s["cel"]["expression"] for s in device_class["spec"].get("selectors", [])]
        expressions += [s["cel"]["expression"] for s in request["selectors"]]
        try:
            selected = selected_devices(self.inventory, tuple(expressions))
        except CelError as exc:
            self.problem(rule, subject, f"a selector fails on the cluster's devices: {exc}.")
            return
        per_node = [selected.get(node["metadata"]["name"], 0) for node in placeable]
        count = request["count"]
        if not any(n >= count for n in per_node):
            self.problem(
                rule, subject,
                f"{count} device(s) of class {request['deviceClassName']} matching its selectors are on no node the "
                f"pods can land on (most on one node: {max(per_node, default=0)}).",
            )  # fmt: skip
        elif not shared and sum(n // count for n in per_node) < pods.count:
            self.problem(
                rule, subject,
                f"{pods.count} pods of {count} device(s) need more matching devices than the {sum(per_node)} on the "
                "nodes they can land on: the workload can never run whole.",
            )  # fmt: skip

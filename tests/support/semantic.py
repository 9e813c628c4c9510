"""Semantic checks of a rendered object set against the cluster it targets: what a real API server, scheduler,
kubelet and gang backend would refuse or leave Pending although every object is schema-valid.

`check(objects, inventory, admitted)` returns a SemanticReport: the problems (rule id, object, plain words) and
how many objects a rule examined. `assert_schedulable(...)` raises when there is any problem.

The inventory is the cluster as discovery sees it (Nodes, DeviceClasses, ResourceSlices, installed CRDs, the
platform's queues, which scheduler owns the GPU nodes); `admitted` is what approval let the team hold. Rules and the
upstream behaviour they follow (docs/provisioning.md, "Semantic checks"):

- scheduler: every node a pod can land on is owned by the pod's `schedulerName` (default `default-scheduler`).
  Volcano's is `volcano`, KAI's `kai-scheduler` (KAI v0.17.0 `pkg/common/constants/constants.go`); two schedulers
  on the same GPUs race and kubelet rejects the loser (volcano-sh/volcano#993).
- node-selection: `nodeSelector` and required node affinity match at least one node, with the scheduler's
  semantics: terms ORed, expressions ANDed, an empty term matches nothing, NotIn/DoesNotExist match a node without
  the key, Gt/Lt compare integers (kubernetes/component-helpers v0.35 `scheduling/corev1/nodeaffinity/
  nodeaffinity.go`, `scheduling/corev1/helpers.go` MatchNodeSelectorTerms).
- tolerations: a node matching the selection has no NoSchedule/NoExecute taint the pod does not tolerate
  (k8s.io/api v0.35 `core/v1/toleration.go` ToleratesTaint: empty effect matches every effect, Exists ignores the
  value, an empty key with Exists tolerates everything); `spec.unschedulable` counts as the
  `node.kubernetes.io/unschedulable` taint (TaintNodesByCondition).
- extended-resources: every extended resource in `limits` is in some placeable node's `status.allocatable`
  (device plugin names: k8s-device-plugin v0.20.0 README "Catalog of Resources": `nvidia.com/gpu`,
  `nvidia.com/gpu.shared`, `nvidia.com/mig-<profile>`), or a DeviceClass declares it as `extendedResourceName`
  (KEP-5004) and a placeable node's ResourceSlices hold the devices; and the placeable nodes hold all replicas.
- claims: every pod claim names a ResourceClaimTemplate (or ResourceClaim) of the set, or the channel template
  a ComputeDomain of the set makes (then the cluster serves the ComputeDomain CRD and the DRA driver's
  `compute-domain-default-channel.nvidia.com` class, dra-driver-nvidia-gpu v0.4.1 `templates/deviceclass-*.yaml`);
  containers use only claims the pod declares; Kueue refuses pods that name a ResourceClaim (kueue v0.19.2,
  templates only).
- device-classes: every device request's `deviceClassName` exists on the cluster (the NVIDIA chart creates
  `gpu.nvidia.com` and `mig.nvidia.com`).
- devices: the class's and the request's CEL selectors select `count` devices in one placeable node's
  ResourceSlices (attributes as the NVIDIA driver publishes them, v0.4.1 `cmd/gpu-kubelet-plugin/deviceinfo.go`),
  and the placeable nodes hold every replica's claim. A selector reading an attribute a device lacks is a runtime
  error that aborts the allocation (Kubernetes DRA CEL semantics), so it is a problem, not a non-match.
- quota: the ResourceQuota's GPU keys equal what approval admits, every GPU resource the pods hold is capped by one
  (`requests.<extended resource>`, `<class>.deviceclass.resource.k8s.io/devices`, kubernetes/kubernetes
  `pkg/quota/v1/evaluator/core/resource_claims.go`), and the whole request fits inside it.
- queues: KAI Queue `resources.gpu.quota` equals the team's admitted GPUs, a Volcano Queue `capability` (when set)
  and a Kueue ClusterQueue `nominalQuota` equal what approval admits; every queue a pod, PodGroup, Job or
  LocalQueue names exists (Volcano: an unknown queue is never scheduled, volcano v1.15.1 PodGroup docs; KAI: the
  `kai.scheduler/queue` label names a leaf queue).
- gang: PodGroup `minMember` (Volcano, KAI) and the native Workload/PodGroup `gang.minCount` equal the approved gang
  size and do not exceed the pods the workload runs; pods join a group that exists; a Kueue gang is one suspended
  Job admitted whole.

Pure Python on plain dicts: no Django, no cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

DEFAULT_SCHEDULER = "default-scheduler"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
COMPUTE_DOMAIN_CRD = "computedomains.resource.nvidia.com"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
# Resources that are not extended resources (kubernetes pkg/apis/core/helper IsExtendedResourceName).
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods", "storage")

VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_GROUP_ANNOTATION = "pod-group-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_KINDS = ("Job", "Deployment", "JobSet", "StatefulSet", "Pod")
RULES = (
    "scheduler", "node-selection", "tolerations", "extended-resources", "claims", "device-classes", "devices",
    "quota", "queues", "gang",
)  # fmt: skip


@dataclass(frozen=True, eq=False)  # hashed by identity: device selection is cached per inventory
class Inventory:
    """The target cluster as discovery reads it."""

    nodes: tuple[dict, ...]
    device_classes: tuple[dict, ...] = ()
    resource_slices: tuple[dict, ...] = ()
    # The scheduler the platform runs on its GPU nodes (Volcano / KAI own them when installed for GPUs).
    gpu_node_scheduler: str = DEFAULT_SCHEDULER
    crds: frozenset[str] = frozenset()  # "<plural>.<group>" of installed CRDs
    queues: frozenset[str] = frozenset()  # KAI / Volcano queues the platform created (parents)
    cluster_queues: frozenset[str] = frozenset()  # Kueue ClusterQueues the platform created


@dataclass(frozen=True)
class Admitted:
    """What approval admits for the team and this request."""

    quota: dict[str, int] = field(default_factory=dict)  # ResourceQuota hard key -> amount, GPU keys only
    team_gpus: int = 0  # whole GPUs (or gpu.nvidia.com devices) the team may hold: the gang queue's quota
    gang_size: int | None = None  # pods that must start together; None: no gang


@dataclass(frozen=True)
class SemanticProblem:
    rule: str
    object: str  # "Kind/name"
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.object}: {self.message}"


@dataclass
class SemanticReport:
    problems: list[SemanticProblem] = field(default_factory=list)
    checked: set[int] = field(default_factory=set)  # id() of the objects a rule examined

    @property
    def objects_checked(self) -> int:
        return len(self.checked)

    def rules(self) -> set[str]:
        return {p.rule for p in self.problems}


class SemanticInvalid(AssertionError):
    pass


def assert_schedulable(objects: list[dict], inventory: Inventory, admitted: Admitted) -> SemanticReport:
    report = check(objects, inventory, admitted)
    if report.problems:
        raise SemanticInvalid("\n".join(str(p) for p in report.problems))
    return report


def check(objects: list[dict], inventory: Inventory, admitted: Admitted) -> SemanticReport:
    report = SemanticReport()
    _Checker(objects, inventory, admitted, report).run()
    return report


def _ref(obj: dict) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


# --- node selection (component-helpers nodeaffinity semantics) ---------------------------------------------------


def _expression_matches(expression: dict, labels: dict[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        try:
            node_value, bound = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False  # a missing or non-integer label never satisfies Gt/Lt
        return node_value > bound if operator == "Gt" else node_value < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def _field_matches(expression: dict, node: dict) -> bool:
    # matchFields supports metadata.name only.
    return _expression_matches(expression, {"metadata.name": node["metadata"]["name"]})


def _term_matches(term: dict, node: dict) -> bool:
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    labels = node["metadata"].get("labels", {})
    return all(_expression_matches(e, labels) for e in expressions) and all(_field_matches(f, node) for f in fields)


def node_matches(pod: dict, node: dict) -> bool:
    labels = node["metadata"].get("labels", {})
    if any(labels.get(key) != value for key, value in (pod.get("nodeSelector") or {}).items()):
        return False
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    return any(_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def _unmet_requirements(pod: dict, nodes: tuple[dict, ...]) -> list[str]:
    """The single requirements no node meets, for the message."""
    unmet = []
    for key, value in (pod.get("nodeSelector") or {}).items():
        if not any(n["metadata"].get("labels", {}).get(key) == value for n in nodes):
            unmet.append(f"{key}={value}")
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if not any(_expression_matches(expression, n["metadata"].get("labels", {})) for n in nodes):
                unmet.append(f"{expression['key']} {expression['operator']} {expression.get('values') or ''}".strip())
    return unmet


# --- taints and tolerations (k8s.io/api core/v1 toleration.go) -------------------------------------------------


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration["key"] != taint["key"]:
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def node_taints(node: dict) -> list[dict]:
    taints = [t for t in node.get("spec", {}).get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]
    if node.get("spec", {}).get("unschedulable") and not any(t["key"] == UNSCHEDULABLE_TAINT["key"] for t in taints):
        taints.append(UNSCHEDULABLE_TAINT)
    return taints


def untolerated(pod: dict, node: dict) -> list[dict]:
    tolerations = pod.get("tolerations") or []
    return [t for t in node_taints(node) if not any(_tolerates(tol, t) for tol in tolerations)]


# --- a small CEL evaluator for DRA selectors -----------------------------------------------------------------------

_ATTR = r"device\.attributes\['(?P<domain>[^']+)'\]"
_STRING = r"'(?P<value>(?:[^'\\]|\\.)*)'"
_CEL_PATTERNS = (
    ("driver", re.compile(rf"^device\.driver == {_STRING}$")),
    ("has", re.compile(rf"^'(?P<name>[A-Za-z0-9_./-]+)' in {_ATTR}$")),
    ("major", re.compile(rf"^{_ATTR}\.(?P<name>\w+)\.major\(\) (?P<op>>=|==|>|<=|<) (?P<number>\d+)$")),
    ("string", re.compile(rf"^{_ATTR}\.(?P<name>\w+) == {_STRING}$")),
    ("int", re.compile(rf"^{_ATTR}\.(?P<name>\w+) == (?P<number>\d+)$")),
)


class CelError(ValueError):
    """The expression reads an attribute the device lacks (aborts allocation), or is outside what we evaluate."""


def _attribute(slice_driver: str, device: dict, domain: str, name: str) -> dict | None:
    attributes = device.get("attributes") or {}
    if domain == slice_driver and name in attributes:
        return attributes[name]
    return attributes.get(f"{domain}/{name}")


@cache
def _parse_term(term: str) -> tuple[str, dict]:
    for kind, pattern in _CEL_PATTERNS:
        if match := pattern.match(term):
            return kind, match.groupdict()
    raise CelError(f"selector term {term!r} is outside what the checker evaluates")


def _cel_term(term: str, slice_driver: str, device: dict) -> bool:
    kind, match = _parse_term(term)
    if kind == "driver":
        return slice_driver == match["value"]
    value = _attribute(slice_driver, device, match["domain"], match["name"])
    if kind == "has":
        return value is not None
    if value is None:
        raise CelError(f"device {device['name']} has no attribute {match['name']!r} ({term})")
    if kind == "string":
        return value.get("string") == match["value"].replace("\\'", "'").replace("\\\\", "\\")
    if kind == "int":
        return value.get("int") == int(match["number"])
    major = int(str(value.get("version", "")).split(".")[0] or -1)
    number = int(match["number"])
    return {">=": major >= number, "==": major == number, ">": major > number, "<=": major <= number,
            "<": major < number}[match["op"]]  # fmt: skip


def cel_selects(expression: str, slice_driver: str, device: dict) -> bool:
    """`&&` short-circuits as in CEL, so a guard (`'x' in attrs && attrs.x...`) protects the terms after it."""
    for term in expression.split(" && "):
        if not _cel_term(term.strip(), slice_driver, device):
            return False
    return True


@cache
def selected_devices(inventory: Inventory, expressions: tuple[str, ...]) -> dict[str, int]:
    """Node name -> devices of its ResourceSlices that every expression selects (raises CelError)."""
    selected: dict[str, int] = {}
    for resource_slice in inventory.resource_slices:
        driver, node = resource_slice["spec"]["driver"], resource_slice["spec"].get("nodeName", "")
        for device in resource_slice["spec"].get("devices", []):
            if all(cel_selects(e, driver, device) for e in expressions):
                selected[node] = selected.get(node, 0) + 1
    return selected


# --- the checker ---------------------------------------------------------------------------------------------------


@dataclass
class _Pods:
    """One pod template and how many pods its workload runs."""

    workload: dict
    template: dict
    count: int


class _Checker:
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
        self.report.problems.append(SemanticProblem(rule, _ref(obj), message))

    def examined(self, obj: dict) -> None:
        self.report.checked.add(id(obj))

    def names(self, kind: str, api_group: str | None = None) -> set[str]:
        return {
            o["metadata"]["name"]
            for o in self.by_kind.get(kind, [])
            if api_group is None or o["apiVersion"].startswith(api_group)
        }

    def run(self) -> None:
        for pods in self.workloads():
            self.examined(pods.workload)
            self.check_pods(pods)
        self.check_quota()
        self.check_queues()
        self.check_gang()

    # pods ---------------------------------------------------------------------------------------------------------

    def workloads(self) -> list[_Pods]:
        found = []
        for obj in self.objects:
            kind, spec = obj["kind"], obj.get("spec", {})
            if kind == "Job":
                found.append(_Pods(obj, spec["template"], int(spec.get("parallelism", 1))))
            elif kind in ("Deployment", "StatefulSet"):
                found.append(_Pods(obj, spec["template"], int(spec.get("replicas", 1))))
            elif kind == "JobSet":
                for replicated in spec.get("replicatedJobs", []):
                    job_spec = replicated["template"]["spec"]
                    count = int(replicated.get("replicas", 1)) * int(job_spec.get("parallelism", 1))
                    found.append(_Pods(obj, job_spec["template"], count))
            elif kind == "Pod":
                found.append(_Pods(obj, {"metadata": obj["metadata"], "spec": spec}, 1))
        return found

    def check_pods(self, pods: _Pods) -> None:
        pod, workload = pods.template["spec"], pods.workload
        nodes = self.inventory.nodes
        matching = [n for n in nodes if node_matches(pod, n)]
        if not matching:
            unmet = _unmet_requirements(pod, nodes) or ["the combination of the node selector and node affinity"]
            self.problem(
                "node-selection", workload,
                f"no node of the cluster ({len(nodes)} nodes) matches the pod's node selection; no node has "
                f"{'; '.join(unmet)}.",
            )  # fmt: skip
            return
        placeable = [n for n in matching if not untolerated(pod, n)]
        if not placeable:
            taints = sorted({f"{t['key']}={t.get('value', '')}:{t['effect']}" for n in matching for t in untolerated(pod, n)})
            self.problem(
                "tolerations", workload,
                f"every node matching the pod's selection ({len(matching)}) has a taint the pod does not tolerate: "
                f"{', '.join(taints)}.",
            )  # fmt: skip
            return
        self.check_scheduler(pod, workload, placeable)
        self.check_extended_resources(pods, placeable)
        self.check_claims(pods, placeable)

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

    def check_extended_resources(self, pods: _Pods, placeable: list[dict]) -> None:
        for container in pods.template["spec"].get("containers", []):
            for resource, amount in (container.get("resources", {}).get("limits") or {}).items():
                if resource in STANDARD_RESOURCES or resource.startswith(("hugepages-", "requests.")):
                    continue
                if "/" not in resource or resource.startswith("kubernetes.io/"):
                    continue
                self._check_extended(pods, resource, int(amount), placeable)

    def _check_extended(self, pods: _Pods, resource: str, amount: int, placeable: list[dict]) -> None:
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
        if classes:
            request = {"deviceClassName": classes[-1]["metadata"]["name"], "count": amount, "selectors": []}
            self._check_devices(pods, request, placeable, rule="extended-resources")
            return
        self.problem(
            "extended-resources", pods.workload,
            f"{resource} is advertised by no node the pods can land on and declared by no DeviceClass "
            "(extendedResourceName): the pods would stay Pending.",
        )  # fmt: skip

    def check_claims(self, pods: _Pods, placeable: list[dict]) -> None:
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

    def check_claim_spec(self, pods: _Pods, claim: dict, spec: dict, placeable: list[dict], *, shared: bool) -> None:
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

    def _check_devices(self, pods: _Pods, request: dict, placeable: list[dict], *, rule: str,
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

    # quota --------------------------------------------------------------------------------------------------------

    def demand(self) -> dict[str, int]:
        """ResourceQuota key -> what all the set's pods hold at once."""
        templates = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaimTemplate", [])}
        claims = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaim", [])}
        extended_classes = {c["spec"]["extendedResourceName"]: name for name, c in self.classes.items()
                            if c.get("spec", {}).get("extendedResourceName")}  # fmt: skip
        total: dict[str, int] = {}

        def add(key: str, amount: int) -> None:
            total[key] = total.get(key, 0) + amount

        for pods in self.workloads():
            pod = pods.template["spec"]
            for container in pod.get("containers", []):
                for resource, amount in (container.get("resources", {}).get("limits") or {}).items():
                    if not resource.startswith("nvidia.com/"):
                        continue
                    node_advertises = any(resource in n.get("status", {}).get("allocatable", {})
                                          for n in self.inventory.nodes)  # fmt: skip
                    if not node_advertises and resource in extended_classes:
                        add(device_class_key(extended_classes[resource]), int(amount) * pods.count)
                    else:
                        add(f"requests.{resource}", int(amount) * pods.count)
            for entry in pod.get("resourceClaims") or []:
                if entry.get("resourceClaimName") in claims:
                    spec, times = claims[entry["resourceClaimName"]]["spec"], 1  # one claim, counted once
                elif entry.get("resourceClaimTemplateName") in templates:
                    spec, times = templates[entry["resourceClaimTemplateName"]]["spec"]["spec"], pods.count
                else:
                    continue
                for request in spec.get("devices", {}).get("requests", []):
                    exactly = request.get("exactly") or request
                    add(device_class_key(exactly["deviceClassName"]), int(exactly.get("count", 1)) * times)
        return total

    def check_quota(self) -> None:
        quotas = self.by_kind.get("ResourceQuota", [])
        for quota in quotas:
            self.examined(quota)
        hard: dict[str, int] = {}
        for quota in quotas:
            for key, value in quota["spec"].get("hard", {}).items():
                if _gpu_key(key):
                    hard[key] = min(int(value), hard.get(key, int(value)))
        if self.admitted.quota or quotas:
            subject = quotas[0] if quotas else {"kind": "ResourceQuota", "metadata": {"name": "(missing)"}}
            if hard != self.admitted.quota:
                self.problem(
                    "quota", subject,
                    f"GPU limits {_fmt(hard)} differ from what approval admits {_fmt(self.admitted.quota)}.",
                )
        if not hard:
            return
        for key, amount in self.demand().items():
            if key not in hard:
                self.problem(
                    "quota", quotas[0],
                    f"the pods hold {amount} of {key}, which the quota does not cap: approval's limit is not "
                    "enforced on the cluster.",
                )  # fmt: skip
            elif amount > hard[key]:
                self.problem(
                    "quota", quotas[0],
                    f"the request holds {amount} of {key} at once but the quota allows {hard[key]}: approved pods "
                    "would be refused by the API server.",
                )  # fmt: skip

    # queues -------------------------------------------------------------------------------------------------------

    def check_queues(self) -> None:
        kai_queues = [q for q in self.by_kind.get("Queue", []) if q["apiVersion"].startswith("scheduling.run.ai/")]
        volcano_queues = [q for q in self.by_kind.get("Queue", []) if q["apiVersion"].startswith("scheduling.volcano")]
        for queue in kai_queues:
            self.examined(queue)
            gpu_quota = queue["spec"].get("resources", {}).get("gpu", {}).get("quota")
            if gpu_quota != self.admitted.team_gpus:
                self.problem("queues", queue,
                             f"its GPU quota is {gpu_quota}; approval admits {self.admitted.team_gpus} for the team.")
            self._parent_exists(queue, queue["spec"].get("parentQueue"))
        for queue in volcano_queues:
            self.examined(queue)
            capability = queue["spec"].get("capability")
            if capability is not None:
                admitted = {k.removeprefix("requests."): v for k, v in self.admitted.quota.items()
                            if k.startswith("requests.")}  # fmt: skip
                gpus = {k: int(v) for k, v in capability.items() if k.startswith("nvidia.com/")}
                if gpus != admitted:
                    self.problem("queues", queue,
                                 f"its capability {_fmt(gpus)} differs from what approval admits {_fmt(admitted)}.")
            self._parent_exists(queue, queue["spec"].get("parent"))
        for cluster_queue in self.by_kind.get("ClusterQueue", []):
            self.examined(cluster_queue)
            nominal = {
                r["name"]: int(r["nominalQuota"])
                for group in cluster_queue["spec"].get("resourceGroups", [])
                for flavor in group.get("flavors", [])
                for r in flavor.get("resources", [])
                if r["name"].startswith("nvidia.com/")
            }
            admitted = {k.removeprefix("requests."): v for k, v in self.admitted.quota.items()
                        if k.startswith("requests.")}  # fmt: skip
            if nominal != admitted:
                self.problem("queues", cluster_queue,
                             f"nominalQuota {_fmt(nominal)} differs from what approval admits {_fmt(admitted)}.")
        cluster_queues = self.names("ClusterQueue") | set(self.inventory.cluster_queues)
        for local_queue in self.by_kind.get("LocalQueue", []):
            self.examined(local_queue)
            if local_queue["spec"].get("clusterQueue") not in cluster_queues:
                self.problem("queues", local_queue,
                             f"it points at ClusterQueue {local_queue['spec'].get('clusterQueue')!r}, which the "
                             "cluster does not have: nothing in it is ever admitted.")
        self._references_resolve(kai_queues, volcano_queues)

    def _parent_exists(self, queue: dict, parent: str | None) -> None:
        if parent and parent not in self.inventory.queues:
            self.problem("queues", queue, f"its parent queue {parent!r} does not exist on the cluster.")

    def _references_resolve(self, kai_queues: list[dict], volcano_queues: list[dict]) -> None:
        kai = {q["metadata"]["name"] for q in kai_queues} | set(self.inventory.queues)
        volcano = {q["metadata"]["name"] for q in volcano_queues} | set(self.inventory.queues)
        local = self.names("LocalQueue")
        for pods in self.workloads():
            workload, template = pods.workload, pods.template
            labels, annotations = template["metadata"].get("labels", {}), template["metadata"].get("annotations", {})
            if (name := labels.get(KAI_QUEUE_LABEL)) and name not in kai:
                self.problem("queues", workload, f"its pods name KAI queue {name!r}, which does not exist.")
            if (name := annotations.get(VOLCANO_QUEUE_ANNOTATION)) and name not in volcano:
                self.problem("queues", workload, f"its pods name Volcano queue {name!r}, which does not exist.")
            if (name := workload["metadata"].get("labels", {}).get(KUEUE_QUEUE_LABEL)) and name not in local:
                self.problem("queues", workload, f"it names Kueue LocalQueue {name!r}, which the set lacks.")
        for group in self.by_kind.get("PodGroup", []):
            queue = group["spec"].get("queue")
            known = kai if group["apiVersion"].startswith("scheduling.run.ai/") else volcano
            if queue is not None and queue not in known:
                self.problem("queues", group, f"it joins queue {queue!r}, which does not exist: it is never scheduled.")

    # gang ---------------------------------------------------------------------------------------------------------

    def check_gang(self) -> None:
        size = self.admitted.gang_size
        workloads = self.workloads()
        pods_total = sum(p.count for p in workloads)
        groups = self.by_kind.get("PodGroup", [])
        native_workloads = [w for w in self.by_kind.get("Workload", []) if w["apiVersion"].startswith("scheduling.k8s")]
        for obj in groups + native_workloads:
            self.examined(obj)
            for minimum in _gang_minimums(obj):
                if minimum != size:
                    self.problem("gang", obj, f"its gang minimum is {minimum}; the approved gang size is {size}.")
                if minimum > pods_total:
                    self.problem("gang", obj, f"its gang minimum {minimum} exceeds the {pods_total} pods the "
                                              "workload runs: the gang never starts.")  # fmt: skip
        group_names = {g["metadata"]["name"] for g in groups}
        for pods in workloads:
            annotations = pods.template["metadata"].get("annotations", {})
            spec = pods.template["spec"]
            for key in (VOLCANO_GROUP_ANNOTATION, KAI_GROUP_ANNOTATION):
                if (name := annotations.get(key)) and name not in group_names:
                    self.problem("gang", pods.workload, f"its pods join PodGroup {name!r} ({key}), which the set lacks.")
            if (name := (spec.get("schedulingGroup") or {}).get("podGroupName")) and name not in group_names:
                self.problem("gang", pods.workload, f"its pods join native PodGroup {name!r}, which the set lacks.")
            if (name := (spec.get("workloadRef") or {}).get("name")) and name not in self.names("Workload"):
                self.problem("gang", pods.workload, f"its pods name Workload {name!r}, which the set lacks.")
        if size is None:
            return
        kueue_jobs = [p for p in workloads if KUEUE_QUEUE_LABEL in p.workload["metadata"].get("labels", {})]
        if not (groups or native_workloads or kueue_jobs):
            subject = workloads[0].workload if workloads else {"kind": "(none)", "metadata": {"name": ""}}
            self.problem("gang", subject, f"approval admitted a gang of {size}, but nothing starts the pods together "
                                          "(no PodGroup, Workload or Kueue-managed Job).")  # fmt: skip
        for pods in kueue_jobs:
            if not pods.workload["spec"].get("suspend") or pods.count < size:
                self.problem("gang", pods.workload, f"a Kueue gang is one suspended Job of at least {size} pods "
                                                    f"(suspend={pods.workload['spec'].get('suspend')}, "
                                                    f"pods={pods.count}).")  # fmt: skip


def _gang_minimums(obj: dict) -> list[int]:
    spec = obj.get("spec", {})
    if "minMember" in spec:
        return [int(spec["minMember"])]
    policies = [spec.get("schedulingPolicy")] if "schedulingPolicy" in spec else []
    policies += [g.get("policy") for g in spec.get("podGroups", [])]
    policies += [g.get("schedulingPolicy") for g in spec.get("podGroupTemplates", [])]
    return [int(p["gang"]["minCount"]) for p in policies if p and "gang" in p]


def device_class_key(device_class: str) -> str:
    return f"{device_class}.deviceclass.resource.k8s.io/devices"


def _gpu_key(key: str) -> bool:
    return key.startswith("requests.nvidia.com/") or key.endswith(".deviceclass.resource.k8s.io/devices")


def _fmt(amounts: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(amounts.items())) + "}"

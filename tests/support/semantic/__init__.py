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
- feature-gates: a native Workload or PodGroup is served and gang-scheduled only with GenericWorkload and
  GangScheduling declared on 1.35/1.36, GenericWorkload on 1.37 (KEP-4671).
- shm: a pod holding device-plugin MPS shares mounts nothing at /dev/shm, where the plugin mounts the MPS daemon's
  shared memory (k8s-device-plugin v0.20.0 `internal/plugin/mps.go`).
- kueue-dra: a Kueue-admitted pod's claims name only DeviceClasses Kueue's deviceClassMappings map (its ComputeDomain
  channel included), and a pod holding DRA devices asks no Kueue topology (kueue v0.19.2 `pkg/dra/claims.go`, DRA
  docs "No DRA + TAS").
- kueue-queue: on a Kueue cluster every GPU workload and its pod template name the team's LocalQueue
  (`kueue.x-k8s.io/queue-name`), and a Job or JobSet is created suspended: Kueue's quota describes what is free only
  if every GPU pod goes through it (kueue v0.19.2 `pkg/controller/jobs/deployment/deployment_webhook.go`,
  `pkg/controller/jobs/pod/pod_webhook.go`, `site/content/en/docs/tasks/run/deployment.md`).
- admission-policy: without Kueue, on a cluster serving admissionregistration.k8s.io/v1, each team namespace with GPU
  pods has a ValidatingAdmissionPolicy whose CEL parses (minimally, cel_syntax.py) and whose inline approvals admit
  the set's own pods, and a binding that names it, matches the namespace and denies (kubernetes/api v0.35.0
  `admissionregistration/v1/types.go`).
- priority: every priority class a pod, PodGroup, Workload or Kueue Job names exists on the cluster or in the set
  (Kubernetes' Priority admission plugin; Kueue v0.19.2 `pkg/util/priority/priority.go`), a WorkloadPriorityClass
  agrees with the PriorityClass of its name, and pods get at least the checkpoint grace their class promises
  (priority.py).
- sharing: a claim one pod holds alone (from a template) carries no MPS cap below its device (dra-driver-nvidia-gpu
  v0.4.1 publishes no allowMultipleAllocations).

Pure Python on plain dicts: no Django, no cluster.
"""

from __future__ import annotations

from .accounting import AccountingRules
from .admission import AdmissionRules
from .cel import CelError, cel_selects, selected_devices
from .crossing import CrossingRules
from .model import (
    CHANNEL_DEVICE_CLASS,
    COMPUTE_DOMAIN_CRD,
    DEFAULT_SCHEDULER,
    RULES,
    Admitted,
    Inventory,
    SemanticInvalid,
    SemanticProblem,
    SemanticReport,
    device_class_key,
)
from .placement import node_matches, untolerated
from .pods import PodRules
from .priority import PriorityRules


class _Checker(PodRules, AccountingRules, CrossingRules, AdmissionRules, PriorityRules):
    def run(self) -> None:
        for pods in self.workloads():
            self.examined(pods.workload)
            placeable = self.check_pods(pods)
            self.check_shm(pods, placeable)
            self.check_kueue_dra(pods, placeable)
            self.check_kueue_queue(pods)
        self.check_quota()
        self.check_queues()
        self.check_gang()
        self.check_feature_gates()
        self.check_claim_sharing()
        self.check_admission_policies()
        self.check_priority()


def check(objects: list[dict], inventory: Inventory, admitted: Admitted) -> SemanticReport:
    report = SemanticReport()
    _Checker(objects, inventory, admitted, report).run()
    return report


def assert_schedulable(objects: list[dict], inventory: Inventory, admitted: Admitted) -> SemanticReport:
    report = check(objects, inventory, admitted)
    if report.problems:
        raise SemanticInvalid("\n".join(str(p) for p in report.problems))
    return report


__all__ = [
    "CHANNEL_DEVICE_CLASS", "COMPUTE_DOMAIN_CRD", "DEFAULT_SCHEDULER", "RULES", "Admitted", "CelError", "Inventory",
    "SemanticInvalid", "SemanticProblem", "SemanticReport", "assert_schedulable", "cel_selects", "check",
    "device_class_key", "node_matches", "selected_devices", "untolerated",
]  # fmt: skip

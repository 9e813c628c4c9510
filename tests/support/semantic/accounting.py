"""Rules on what the set holds and who admits it: quota, queues, gangs."""

from __future__ import annotations

from .base import CheckerBase
from .model import EXTENDED_RESOURCE_MINOR, KAI_GROUP_ANNOTATION, KAI_QUEUE_LABEL, KUEUE_QUEUE_LABEL, VOLCANO_GROUP_ANNOTATION, VOLCANO_QUEUE_ANNOTATION, fmt_amounts, is_gpu_quota_key, device_class_key


class AccountingRules(CheckerBase):
    # quota --------------------------------------------------------------------------------------------------------

    def extended_charged(self) -> bool:
        """Does the API server charge DRA devices to the extended resource their class declares (KEP-5004 README,
        "Resource Quota": claims of a class with extendedResourceName count against `requests.<name>` too)? From
        1.36, where DRAExtendedResource is on; an unknown minor takes it as served."""
        minor = self.inventory.kubernetes_minor
        return minor is None or minor >= EXTENDED_RESOURCE_MINOR or "DRAExtendedResource" in self.inventory.feature_gates

    def demand(self) -> tuple[dict[str, int], dict[str, int]]:
        """(ResourceQuota key -> what all the set's pods hold at once, the same charged to the extended resource of
        a DeviceClass besides its own key, KEP-5004): the second only counts where the quota has that key."""
        templates = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaimTemplate", [])}
        claims = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaim", [])}
        extended_classes = {c["spec"]["extendedResourceName"]: name for name, c in self.classes.items()
                            if c.get("spec", {}).get("extendedResourceName")}  # fmt: skip
        total: dict[str, int] = {}
        also: dict[str, int] = {}
        class_resource = {name: c["spec"]["extendedResourceName"] for name, c in self.classes.items()
                          if c.get("spec", {}).get("extendedResourceName")} if self.extended_charged() else {}

        def add(key: str, amount: int) -> None:
            total[key] = total.get(key, 0) + amount

        def add_class(device_class: str, amount: int) -> None:
            add(device_class_key(device_class), amount)
            if device_class in class_resource:
                key = f"requests.{class_resource[device_class]}"
                also[key] = also.get(key, 0) + amount

        for pods in self.workloads():
            pod = pods.template["spec"]
            for container in pod.get("containers", []):
                for resource, amount in (container.get("resources", {}).get("limits") or {}).items():
                    if not resource.startswith("nvidia.com/"):
                        continue
                    node_advertises = any(resource in n.get("status", {}).get("allocatable", {})
                                          for n in self.inventory.nodes)  # fmt: skip
                    if not node_advertises and resource in extended_classes:
                        add_class(extended_classes[resource], int(amount) * pods.count)
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
                    add_class(exactly["deviceClassName"], int(exactly.get("count", 1)) * times)
        return total, also

    def check_quota(self) -> None:
        quotas = self.by_kind.get("ResourceQuota", [])
        for quota in quotas:
            self.examined(quota)
        hard: dict[str, int] = {}
        for quota in quotas:
            for key, value in quota["spec"].get("hard", {}).items():
                if is_gpu_quota_key(key):
                    hard[key] = min(int(value), hard.get(key, int(value)))
        if self.admitted.quota or quotas:
            subject = quotas[0] if quotas else {"kind": "ResourceQuota", "metadata": {"name": "(missing)"}}
            if hard != self.admitted.quota:
                self.problem(
                    "quota", subject,
                    f"GPU limits {fmt_amounts(hard)} differ from what approval admits {fmt_amounts(self.admitted.quota)}.",
                )
        if not hard:
            return
        primary, also = self.demand()
        charged = {key: primary.get(key, 0) + also.get(key, 0) for key in {*primary, *(set(also) & set(hard))}}
        for key, amount in charged.items():
            if key not in hard:
                self.problem(
                    "quota", quotas[0],
                    f"the pods hold {amount} of {key}, which the quota does not cap: approval's limit is not "
                    "enforced on the cluster.",
                )  # fmt: skip
            elif amount > hard[key]:
                twice = (f" ({also[key]} of them DRA devices, which KEP-5004 charges to {key} as well as to their "
                         "DeviceClass)") if also.get(key) else ""
                self.problem(
                    "quota", quotas[0],
                    f"the request holds {amount} of {key} at once{twice} but the quota allows {hard[key]}: approved "
                    "pods would be refused by the API server.",
                )  # fmt: skip

    # queues -------------------------------------------------------------------------------------------------------

    def check_queues(self) -> None:
        kai_queues = [q for q in self.by_kind.get("Queue", []) if q["apiVersion"].startswith("scheduling.run.ai/")]
        volcano_queues = [q for q in self.by_kind.get("Queue", []) if q["apiVersion"].startswith("scheduling.volcano")]
        for queue in kai_queues:
            self.examined(queue)
            gpu_quota = queue["spec"].get("resources", {}).get("gpu", {}).get("quota")
            counted = self._kai_counted()
            if gpu_quota != counted:
                self.problem("queues", queue,
                             f"its GPU quota is {gpu_quota}; KAI counts {counted} GPUs the team may hold (whole GPUs and "
                             "DRA devices of classes named *gpu*; mig.nvidia.com it never charges to a queue).")
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
                                 f"its capability {fmt_amounts(gpus)} differs from what approval admits {fmt_amounts(admitted)}.")
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
                             f"nominalQuota {fmt_amounts(nominal)} differs from what approval admits {fmt_amounts(admitted)}.")
        cluster_queues = self.names("ClusterQueue") | set(self.inventory.cluster_queues)
        for local_queue in self.by_kind.get("LocalQueue", []):
            self.examined(local_queue)
            if local_queue["spec"].get("clusterQueue") not in cluster_queues:
                self.problem("queues", local_queue,
                             f"it points at ClusterQueue {local_queue['spec'].get('clusterQueue')!r}, which the "
                             "cluster does not have: nothing in it is ever admitted.")
        self._references_resolve(kai_queues, volcano_queues)

    def _kai_counted(self) -> int:
        """The GPUs KAI v0.17.0 charges to the team's queue, from what approval admits: `nvidia.com/gpu` and the DRA
        devices of classes whose name contains "gpu" (`pkg/common/resources/dra.go` IsGPUDeviceClass)."""
        if not self.admitted.quota:
            return self.admitted.team_gpus
        suffix = ".deviceclass.resource.k8s.io/devices"
        return sum(int(n) for key, n in self.admitted.quota.items()
                   if key == "requests.nvidia.com/gpu" or (key.endswith(suffix) and "gpu" in key.removesuffix(suffix)))

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
        allocatable = {r for n in self.inventory.nodes for r in n.get("status", {}).get("allocatable", {})}
        for group in groups:
            minimum = group["spec"].get("minResources") or {}
            # volcano v1.15.1: the gang's minResources are checked against queue and node allocatable, where DRA
            # devices never appear (pkg/scheduler/api/node_info.go).
            missing = sorted(r for r in minimum if r.startswith("nvidia.com/") and r not in allocatable)
            if group["apiVersion"].startswith("scheduling.volcano.sh/") and missing:
                self.problem("gang", group, f"its minResources ask {', '.join(missing)}, which no node's allocatable "
                                            "lists: Volcano never finds room for the gang.")  # fmt: skip
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



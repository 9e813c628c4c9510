"""Rules where two systems meet: the API server's feature gates and the native gang, the device plugin's MPS mounts
and the pod's own, Kueue's DRA integration and the claims, the DRA driver's sharing config and who holds a claim."""

from __future__ import annotations

from .base import CheckerBase, PodSet
from .model import (
    CHANNEL_DEVICE_CLASS,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_QUEUE_LABEL,
    KUEUE_REQUIRED_TOPOLOGY,
    SHARING_STRATEGY_LABEL,
)

# KEP-4671 (kubernetes/enhancements keps/sig-scheduling/4671-gang-scheduling, kep.yaml and README "Feature gates merge
# in v1.37"): two alpha gates on 1.35/1.36, GenericWorkload (the API) and GangScheduling (the scheduler plugin);
# 1.37 merged them into GenericWorkload, still off by default.
NATIVE_GANG_GATES = {35: ("GenericWorkload", "GangScheduling"), 36: ("GenericWorkload", "GangScheduling"),
                     37: ("GenericWorkload",)}  # fmt: skip
SHM = "/dev/shm"


class CrossingRules(CheckerBase):
    # feature-gates ------------------------------------------------------------------------------------------------

    def check_feature_gates(self) -> None:
        minor = self.inventory.kubernetes_minor
        if minor is None:
            return
        native = [o for o in self.by_kind.get("Workload", []) + self.by_kind.get("PodGroup", [])
                  if o["apiVersion"].startswith("scheduling.k8s.io/")]  # fmt: skip
        for obj in native:
            if minor not in NATIVE_GANG_GATES:
                self.problem("feature-gates", obj, f"Kubernetes 1.{minor} serves no native Workload API.")
                continue
            missing = [g for g in NATIVE_GANG_GATES[minor] if g not in self.inventory.feature_gates]
            if missing:
                self.problem(
                    "feature-gates", obj,
                    f"Kubernetes 1.{minor} needs {' and '.join(missing)} on (alpha or beta, off by default): without "
                    "GenericWorkload the API server rejects it, without GangScheduling the pods start one by one.",
                )  # fmt: skip

    # shm ----------------------------------------------------------------------------------------------------------

    def _mps_claims(self, pod: dict) -> list[str]:
        templates = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaimTemplate", [])}
        return [name for entry in pod.get("resourceClaims") or []
                if (name := entry.get("resourceClaimTemplateName", "")) in templates
                and any(_sharing(c).get("strategy") == "MPS"
                        for c in templates[name]["spec"]["spec"].get("devices", {}).get("config") or [])]  # fmt: skip

    def check_shm(self, pods: PodSet, placeable: list[dict]) -> None:
        """k8s-device-plugin v0.20.0 `internal/plugin/mps.go` (updateReponse) mounts the MPS control daemon's shared
        memory at /dev/shm (`cmd/mps-control-daemon/mps/daemon.go` ShmDir), and so does the DRA driver for a claim
        with an MPS config (dra-driver-nvidia-gpu v0.4.1 `cmd/gpu-kubelet-plugin/sharing.go`); a volume the pod
        mounts there too hides it, so the clients never reach the MPS server."""
        mps_nodes = [n for n in placeable if n["metadata"].get("labels", {}).get(SHARING_STRATEGY_LABEL) == "mps"]
        mps_claims = self._mps_claims(pods.template["spec"])
        for container in pods.template["spec"].get("containers", []):
            limits = container.get("resources", {}).get("limits") or {}
            shares = [r for r in limits if r.startswith("nvidia.com/")
                      and any(r in n.get("status", {}).get("allocatable", {}) for n in mps_nodes)]  # fmt: skip
            shares += [f"claim {name}" for name in mps_claims]
            mounts = [m for m in container.get("volumeMounts") or [] if m.get("mountPath", "").rstrip("/") == SHM]
            if shares and mounts:
                self.problem(
                    "shm", pods.workload,
                    f"container {container['name']} holds MPS shares ({', '.join(shares)}) and mounts volume "
                    f"{mounts[0]['name']} at {SHM}, hiding the MPS daemon's shared memory the device plugin mounts "
                    "there: its CUDA calls cannot reach the MPS server.",
                )  # fmt: skip

    # kueue-dra ----------------------------------------------------------------------------------------------------

    def _claim_classes(self, pod: dict) -> set[str]:
        templates = {o["metadata"]["name"]: o for o in self.by_kind.get("ResourceClaimTemplate", [])}
        channels = {cd["spec"]["channel"]["resourceClaimTemplate"]["name"] for cd in self.by_kind.get("ComputeDomain", [])}
        classes = set()
        for entry in pod.get("resourceClaims") or []:
            name = entry.get("resourceClaimTemplateName", "")
            if name in channels:
                classes.add(CHANNEL_DEVICE_CLASS)
            elif name in templates:
                for request in templates[name]["spec"]["spec"].get("devices", {}).get("requests", []):
                    classes.add((request.get("exactly") or request).get("deviceClassName"))
        return classes - {None}

    def _dra_extended_resources(self, pod: dict, placeable: list[dict]) -> list[str]:
        """Extended resources the pod asks that no node advertises but a DeviceClass declares (KEP-5004)."""
        declared = {c.get("spec", {}).get("extendedResourceName") for c in self.classes.values()}
        return [r for container in pod.get("containers", [])
                for r in (container.get("resources", {}).get("limits") or {})
                if r in declared and not any(r in n.get("status", {}).get("allocatable", {}) for n in placeable)]

    def check_kueue_dra(self, pods: PodSet, placeable: list[dict]) -> None:
        """kubernetes-sigs/kueue v0.19.2: `pkg/dra/claims.go` (GetResourceRequestsForResourceClaimTemplates) marks a
        Workload inadmissible when a claim's DeviceClass has no deviceClassMapping; `site/content/en/docs/concepts/
        dynamic_resource_allocation.md` ("No DRA + TAS"): topology-aware scheduling does not count DRA devices."""
        workload, pod = pods.workload, pods.template["spec"]
        if KUEUE_QUEUE_LABEL not in workload["metadata"].get("labels", {}):
            return
        classes = self._claim_classes(pod)
        mapped = self.inventory.kueue_device_class_mappings
        for name in sorted(classes - (mapped if mapped is not None else classes)):
            self.problem(
                "kueue-dra", workload,
                f"its pods' claims name DeviceClass {name}, which Kueue's deviceClassMappings do not map: Kueue marks "
                f"the Workload inadmissible (\"DeviceClass {name} is not mapped in DRA configuration\").",
            )  # fmt: skip
        annotations = pods.template["metadata"].get("annotations", {})
        topology = annotations.get(KUEUE_REQUIRED_TOPOLOGY) or annotations.get(KUEUE_PREFERRED_TOPOLOGY)
        dra = sorted((classes - {CHANNEL_DEVICE_CLASS}) | set(self._dra_extended_resources(pod, placeable)))
        if topology and dra:
            self.problem(
                "kueue-dra", workload,
                f"its pods ask Kueue for one {topology} domain but hold DRA devices ({', '.join(dra)}), which Kueue's "
                "topology-aware scheduling does not count: the domain is chosen without looking at free GPUs.",
            )  # fmt: skip

    # sharing ------------------------------------------------------------------------------------------------------

    def check_claim_sharing(self) -> None:
        """A claim from a template is one pod's, and holds its devices alone: the NVIDIA DRA driver v0.4.1 publishes
        no `allowMultipleAllocations` (`cmd/gpu-kubelet-plugin/deviceinfo.go`), so no other claim can be given them.
        An MPS config that caps its client below the device (`api/nvidia.com/resource/v1beta1/sharing.go` MpsConfig)
        leaves the rest of what the pod pays for idle."""
        for template in self.by_kind.get("ResourceClaimTemplate", []):
            for config in template["spec"]["spec"].get("devices", {}).get("config") or []:
                sharing = _sharing(config)
                mps = sharing.get("mpsConfig") or {}
                if sharing.get("strategy") != "MPS":
                    continue
                caps = []
                if int(mps.get("defaultActiveThreadPercentage", 100)) < 100:
                    caps.append(f"{mps['defaultActiveThreadPercentage']}% of the threads")
                if mps.get("defaultPinnedDeviceMemoryLimit") or mps.get("defaultPerDevicePinnedMemoryLimit"):
                    caps.append(f"{mps.get('defaultPinnedDeviceMemoryLimit') or 'a per-device limit'} of memory")
                if caps:
                    self.problem(
                        "sharing", template,
                        f"each pod's claim holds its GPU alone (no other claim can share it), yet the MPS config caps "
                        f"the pod at {' and '.join(caps)}: it pays for the whole device and gets a part of it.",
                    )  # fmt: skip


def _sharing(config: dict) -> dict:
    """The `sharing` of a claim config entry's NVIDIA GpuConfig (empty for anything else)."""
    return ((config.get("opaque") or {}).get("parameters") or {}).get("sharing") or {}

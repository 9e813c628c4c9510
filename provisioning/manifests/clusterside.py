"""What a DRA cluster must be configured with for the objects the renderer makes for it to be admitted, scheduled
and started: the cluster-side half of rendering, as data (the register shows it, docs/real-clusters.md explains it).

- Kueue (v0.19.2): pods that reference a ResourceClaimTemplate are charged through `resources.deviceClassMappings`
  in Kueue's Configuration (`apis/config/v1beta2/configuration_types.go` DeviceClassMapping); a DeviceClass it has
  no mapping for makes the workload inadmissible (`pkg/dra/claims.go`, "DeviceClass ... is not mapped in DRA
  configuration"). Pods asking an extended resource a DeviceClass declares need no mapping
  (`KueueDRAIntegrationExtendedResource`, beta and on in 0.19), only that name in the ClusterQueue. The IMEX channel
  claim of a ComputeDomain (GB200/GB300 gangs, device plugin or DRA GPUs alike) is a claim like any other: its
  template (dra-driver-nvidia-gpu v0.4.1 `templates/compute-domain-workload-claim-template.tmpl.yaml`) asks one
  device of `compute-domain-default-channel.nvidia.com`, which needs a mapping too, whatever serves the GPUs.
- NVIDIA DRA driver (dra-driver-nvidia-gpu v0.4.1): `GpuConfig` time-slicing settings need the alpha
  `TimeSlicingSettings` gate; without it the renderer leaves them out (each replica's claim holds whole devices).
- Kubernetes: DRAExtendedResource (KEP-5004) is on by default from 1.36; before, pods asking `nvidia.com/gpu` are
  not served from DRA devices, so the renderer uses claims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpu.vocabulary import KUEUE

from .devices import EXTENDED_RESOURCE_MINOR, GPU_DEVICE_CLASS, MIG_DEVICE_CLASS, TIME_SLICING_GATE
from .nvlink import CHANNEL_DEVICE_CLASS

# The logical resource each DeviceClass the renderer uses is charged as in Kueue (a qualified name: DNS subdomain
# prefix, '/', DNS label). The ClusterQueue's coveredResources and nominalQuota use the same names.
KUEUE_DRA_RESOURCES = {GPU_DEVICE_CLASS: "gpu.nvidia.com/devices", MIG_DEVICE_CLASS: "mig.nvidia.com/devices",
                       CHANNEL_DEVICE_CLASS: "compute-domain.nvidia.com/channels"}


def kueue_dra_configuration(device_classes: Iterable[str]) -> dict[str, Any]:
    """The part of Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) that maps these DeviceClasses."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {
            "deviceClassMappings": [
                {"name": KUEUE_DRA_RESOURCES[name], "deviceClassNames": [name]} for name in sorted(set(device_classes))
            ]
        },
    }


def device_classes_for(sharing_modes: Iterable[str], *, compute_domains: bool = False) -> list[str]:
    """The DeviceClasses the claims name: those of DRA pools of these sharing modes (devices.build_device_request),
    and the IMEX channel class where the cluster's pods get ComputeDomains (nvlink.add_imex_channel)."""
    classes = {MIG_DEVICE_CLASS if mode == "mig" else GPU_DEVICE_CLASS for mode in sharing_modes}
    return sorted(classes | ({CHANNEL_DEVICE_CLASS} if compute_domains else set()))


def dra_requirements(
    *,
    kubernetes_minor: int | None,
    gang_scheduler: str,
    sharing_modes: Iterable[str],
    feature_gates: Iterable[str],
    extended_resources: Mapping[str, str],
    compute_domains: bool = False,
) -> list[dict[str, Any]]:
    """Requirements of a cluster with DRA pools of these sharing modes, or whose pods get ComputeDomains (their IMEX
    channel is a DRA claim even where the device plugin serves the GPUs): [{key, component, met, text, config?}].
    `met` is True or False where the portal knows (declared gates, discovered DeviceClasses), None where it cannot
    see the setting (Kueue's Configuration lives in a ConfigMap the portal does not read).
    `extended_resources`: DeviceClass name -> the extendedResourceName it declares (discovered)."""
    modes = sorted(set(sharing_modes))
    if not modes and not compute_domains:
        return []
    found = []
    classes = device_classes_for(modes, compute_domains=compute_domains)
    if gang_scheduler == KUEUE:
        config = kueue_dra_configuration(classes)
        names = ", ".join(KUEUE_DRA_RESOURCES[c] for c in classes)
        channel = (f" Each pod's IMEX channel claim names {CHANNEL_DEVICE_CLASS} (one device a pod): unmapped, "
                   "Kueue marks every gang with a ComputeDomain inadmissible." if compute_domains else "")
        found.append({
            "key": "kueue_device_class_mappings", "component": "Kueue", "met": None, "config": config,
            "text": (f"Kueue admits the DRA pods only if its Configuration maps {', '.join(classes)} in "
                     f"resources.deviceClassMappings (as {names}) and the ClusterQueue covers {names}; pods always "
                     "use ResourceClaimTemplates (Kueue refuses pods naming a ResourceClaim), and the gangs Kueue "
                     "admits carry no claim config (unsupported by Kueue)." + channel),
        })  # fmt: skip
    if not modes:
        return found
    if "time_slicing" in modes:
        gated = TIME_SLICING_GATE in set(feature_gates)
        found.append({
            "key": "dra_time_slicing_gate", "component": "NVIDIA DRA driver", "met": gated,
            "text": (f"Driver gate {TIME_SLICING_GATE} is declared on: time-sliced claims carry GpuConfig "
                     "sharing TimeSlicing." if gated else
                     f"Driver gate {TIME_SLICING_GATE} (alpha, off by default) is not declared: time-sliced claims "
                     "carry no GpuConfig sharing settings (the driver rejects them at prepare time without it); "
                     "each replica's claim holds whole devices."),
        })  # fmt: skip
    served = {name: resource for name, resource in extended_resources.items() if resource}
    if kubernetes_minor is not None and kubernetes_minor < EXTENDED_RESOURCE_MINOR:
        text = (f"Kubernetes 1.{kubernetes_minor}: DRAExtendedResource is alpha and off, so DRA pods get claims "
                "even where a DeviceClass declares extendedResourceName.")
        found.append({"key": "dra_extended_resource", "component": "Kubernetes", "met": False, "text": text})
    elif served:
        listing = ", ".join(f"{resource} ({name})" for name, resource in sorted(served.items()))
        text = (f"DeviceClasses serve extended resources: {listing}. Requests without a driver floor are rendered "
                "with those limits instead of claims" + ("; Kueue charges them by that name without a mapping."
                                                         if gang_scheduler == KUEUE else "."))
        found.append({"key": "dra_extended_resource", "component": "Kubernetes", "met": True, "text": text})
    else:
        found.append({"key": "dra_extended_resource", "component": "Kubernetes", "met": False,
                      "text": "No DeviceClass seen declares extendedResourceName (or the cluster was never synced): "
                              "DRA pods get claims."})
    return found

"""What the cluster allocated to a pod on DRA pools, read from its ResourceClaims and the drivers' ResourceSlices, and
the share of a GPU that is. Pure: dicts as the API serves them in, dataclasses out; no Django.

Where each fact is (kubernetes/api, `resource.k8s.io/v1`, tags kubernetes-1.34.0 to 1.36.0 and
1.37.0-beta.0, `resource/v1/types.go`; `core/v1/types.go` for the pod):

* the pod's claims: `spec.resourceClaims[].resourceClaimName` (a claim named in the pod), for a claim made from a
  template `status.resourceClaimStatuses[].resourceClaimName` (`PodResourceClaimStatus`), and for GPUs asked for
  as an extended resource a DeviceClass serves (KEP-5004, DRAExtendedResource) the claim the scheduler made,
  `status.extendedResourceClaimStatus.resourceClaimName` (`PodExtendedResourceClaimStatus`, from 1.34);
* what a claim got: `status.allocation.devices.results[]` (`DeviceRequestAllocationResult`): `request`, `driver`,
  `pool`, `device`, and for a device shared by capacity (KEP-5075, `DRAConsumableCapacity`) `shareID` and
  `consumedCapacity` (qualified name -> quantity);
* what a device is: the ResourceSlice of its driver and pool, `spec.devices[]` by `name`, its `attributes` and
  `capacity`. The NVIDIA DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1,
  `cmd/gpu-kubelet-plugin/deviceinfo.go`, `mig.go`) names its pool after the node and writes `type` ("gpu" or
  "mig"), `productName` (the NVML name), `profile` (MIG) and the capacity `memory`, unqualified, which the API
  reads under the driver's domain (`gpu.nvidia.com`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping

from gpu.catalogue import mig_equivalents

_QUANTITY = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|)$")
_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}

DeviceKey = tuple[str, str, str]  # (driver, pool, device)


@dataclass(frozen=True)
class ClusterFacts:
    """What a collection pass read besides the pods (chargeback.collect): the portal's ResourceClaims, the drivers'
    ResourceSlices, DeviceTaintRules, the nodes of the pods that failed, and the ReplicaSets and Jobs between the
    pods and the objects the portal applied (their owner chains). Empty where nothing needed them."""

    claims: tuple = ()
    slices: tuple = ()
    taint_rules: tuple = ()
    nodes: tuple = ()
    owners: tuple = ()


def quantity(value) -> Fraction | None:
    """A Kubernetes quantity ("180Gi", "40G", "1.5Ti") as an exact number; None when it is not one of those."""
    match = _QUANTITY.match(str(value or "").strip())
    if not match:
        return None
    return Fraction(match["number"]) * _SUFFIX[match["suffix"]]


@dataclass(frozen=True)
class AllocatedDevice:
    driver: str
    pool: str
    device: str
    kind: str  # "gpu", "mig", or "" when the slice does not say (or is gone)
    product: str
    profile: str
    memory: Fraction | None  # the device's memory capacity
    consumed_memory: Fraction | None  # what this claim consumed of it (a device shared by capacity)

    @property
    def key(self) -> DeviceKey:
        return self.driver, self.pool, self.device


@dataclass(frozen=True)
class AllocatedShape:
    """What the allocation is in billing terms."""

    gpu_model: str
    mig: bool
    mig_profile: str
    devices: int
    equivalents: Fraction


def _attribute(device: Mapping, name: str, driver: str) -> str:
    attributes = device.get("attributes") or {}
    value = attributes.get(name) or attributes.get(f"{driver}/{name}") or {}
    return str(next(iter(value.values()), "")) if isinstance(value, dict) and value else ""


def _capacity(device: Mapping, name: str, driver: str) -> Fraction | None:
    capacity = device.get("capacity") or {}
    value = capacity.get(name) or capacity.get(f"{driver}/{name}") or {}
    return quantity(value.get("value")) if isinstance(value, dict) else None


def slice_devices(slices: Iterable[Mapping]) -> dict[DeviceKey, Mapping]:
    """Every device of every ResourceSlice by (driver, pool, device name)."""
    found = {}
    for slice_ in slices:
        spec = slice_.get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        for device in spec.get("devices") or []:
            found[(driver, pool, device.get("name", ""))] = device
    return found


def claims_by_name(claims: Iterable[Mapping]) -> dict[tuple[str, str], Mapping]:
    return {((c.get("metadata") or {}).get("namespace", ""), (c.get("metadata") or {}).get("name", "")): c
            for c in claims}


def pod_claim_names(pod: Mapping) -> list[str]:
    """The ResourceClaims a pod uses: named in its spec, or made for it from a template (its status says which)."""
    named = [c["resourceClaimName"] for c in (pod.get("spec") or {}).get("resourceClaims") or []
             if c.get("resourceClaimName")]
    status = pod.get("status") or {}
    generated = [s["resourceClaimName"] for s in status.get("resourceClaimStatuses") or []
                 if s.get("resourceClaimName")]
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    return named + generated + ([extended] if extended else [])


def uses_claims(pod: Mapping) -> bool:
    return bool((pod.get("spec") or {}).get("resourceClaims")
                or ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))


def pod_devices(pod: Mapping, *, claims: Mapping[tuple[str, str], Mapping],
                devices: Mapping[DeviceKey, Mapping]) -> list[AllocatedDevice] | None:
    """The devices the pod's claims were allocated; None when it has claims but not all of them are allocated
    (or read) yet."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    found: list[AllocatedDevice] = []
    names = pod_claim_names(pod)
    if not names:
        return None
    for name in names:
        claim = claims.get((namespace, name))
        results = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
        if not results:
            return None
        for result in results:
            driver, pool, device_name = result.get("driver", ""), result.get("pool", ""), result.get("device", "")
            device = devices.get((driver, pool, device_name)) or {}
            consumed = (result.get("consumedCapacity") or {})
            found.append(AllocatedDevice(
                driver=driver, pool=pool, device=device_name, kind=_attribute(device, "type", driver),
                product=_attribute(device, "productName", driver), profile=_attribute(device, "profile", driver),
                memory=_capacity(device, "memory", driver),
                consumed_memory=quantity(consumed.get("memory") or consumed.get(f"{driver}/memory")),
            ))
    return found


def allocated_shape(devices: list[AllocatedDevice], *, catalogue, policy: str = "compute") -> AllocatedShape | None:
    """GPU model, MIG profile, device count and exact GPU equivalents of what was allocated; None when a device
    is not one the catalogue knows (the labels are billed then, as before)."""
    if not devices:
        return None
    models = [catalogue.model_by_dra_product_name(d.product) for d in devices]
    if any(m is None for m in models) or len({m.key for m in models}) != 1:
        return None
    model = models[0]
    if all(d.kind == "mig" for d in devices):
        if model.mig is None or any(d.profile not in model.mig.profiles for d in devices):
            return None
        total = sum((mig_equivalents(model.mig.profiles[d.profile], model.mig, policy=policy) for d in devices),
                    Fraction(0))
        profiles = sorted({d.profile for d in devices})
        return AllocatedShape(model.key, True, "+".join(profiles), len(devices), total)
    if all(d.kind == "gpu" for d in devices):
        # A device shared by capacity counts as the share of its memory the claim consumed.
        total = sum((d.consumed_memory / d.memory if d.consumed_memory and d.memory else Fraction(1)
                     for d in devices), Fraction(0))
        return AllocatedShape(model.key, False, "", len(devices), total)
    return None


def describe(shape: AllocatedShape) -> str:
    what = f"{shape.devices} x {shape.mig_profile}" if shape.mig else f"{shape.devices} GPU(s)"
    return f"{what} of {shape.gpu_model} ({float(shape.equivalents):.4g} GPU equivalents)"

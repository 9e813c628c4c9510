"""Who holds which GPUs: non-terminated pods and the DRA claims reserved for them -> `PodUse` per holder, and the
DeviceClasses as the portal records them."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import contract
from .resources import DRA_DRIVER, DRA_GPU, DRA_MIG_PREFIX, NVIDIA, quantity


@dataclass(frozen=True)
class PodUse:
    namespace: str
    name: str
    uid: str
    node: str  # "" while unscheduled
    phase: str
    resources: dict[str, int]  # GPU resource keys -> count held on `node`
    request_id: int | None
    team: str
    started_at: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace, "name": self.name, "uid": self.uid, "phase": self.phase,
            "resources": dict(self.resources), "request_id": self.request_id, "team": self.team,
            "started_at": self.started_at,
        }  # fmt: skip


def _pod_extended(spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective extended GPU resources of a pod: the sum over containers, or the largest init container."""

    def of(container: Mapping[str, Any]) -> dict[str, int]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return {k: n for k, v in merged.items() if k.startswith(NVIDIA) and (n := quantity(v))}

    total: Counter = Counter()
    for container in spec.get("containers") or []:
        total.update(of(container))
    for container in spec.get("initContainers") or []:
        for key, count in of(container).items():
            total[key] = max(total[key], count)
    return dict(total)


def parse_pods(pods: Iterable[Mapping[str, Any]], *, claims: Iterable[Mapping[str, Any]] = (),
               dra_device_keys: Mapping[tuple[str, str], tuple[str, str]] | None = None,
               label_domain: str = contract.DEFAULT_LABEL_DOMAIN) -> list[PodUse]:
    """GPU holders among non-terminated pods. DRA devices are attributed through the allocated ResourceClaims that
    reserve them for a pod (`status.reservedFor`), mapped to nodes by `dra_device_keys`: (pool, device) ->
    (node, resource key)."""
    dra_device_keys = dra_device_keys or {}
    held_by_pod: dict[str, Counter] = {}
    node_of_pod_claims: dict[str, str] = {}
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or []
        for holder in (claim.get("status") or {}).get("reservedFor") or []:
            if holder.get("resource") != "pods":
                continue
            uid = holder.get("uid") or ""
            for result in results:
                if result.get("driver") != DRA_DRIVER:
                    continue
                where = dra_device_keys.get((result.get("pool", ""), result.get("device", "")))
                if where:
                    node_of_pod_claims[uid] = where[0]
                    held_by_pod.setdefault(uid, Counter())[where[1]] += 1
    found = []
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        # A pod whose extended resources DRA serves (KEP-5004) holds them through the claim the scheduler made for
        # it (`status.extendedResourceClaimStatus`): count its devices once, from that claim.
        resources = Counter() if status.get("extendedResourceClaimStatus") else Counter(_pod_extended(spec))
        resources.update(held_by_pod.get(meta.get("uid", ""), {}))
        if not resources:
            continue  # no NVIDIA extended resource, and no GPU device allocated to its claims (yet)
        identity = contract.pod_identity(pod, label_domain)
        found.append(
            PodUse(
                namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""),
                node=spec.get("nodeName") or node_of_pod_claims.get(meta.get("uid", ""), ""),
                phase=status.get("phase", "Pending"), resources=dict(resources),
                request_id=contract.attributed_request_id(identity), team=identity.team,
                started_at=status.get("startTime"),
            )
        )  # fmt: skip
    return found


def device_classes(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """DeviceClasses as the portal records them: name, the extended resource a KEP-5004 class serves pods asking
    for it (`spec.extendedResourceName`, resource.k8s.io/v1 1.34+; "" when none) and its CEL selectors, by name."""
    found = []
    for item in items:
        spec = item.get("spec") or {}
        found.append({
            "name": (item.get("metadata") or {}).get("name", ""),
            "extended_resource_name": spec.get("extendedResourceName") or "",
            "selectors": [(s.get("cel") or {}).get("expression", "") for s in spec.get("selectors") or []],
        })  # fmt: skip
    return sorted(found, key=lambda c: c["name"])


def dra_device_keys(devices_by_node: Mapping[str, Sequence[dict]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(ResourceSlice pool, device name) -> (node, resource key), to attribute allocated claims to nodes."""
    keys = {}
    for node, devices in devices_by_node.items():
        for device in devices:
            if device["type"] in ("gpu", "mig"):
                key = DRA_GPU if device["type"] == "gpu" else f"{DRA_MIG_PREFIX}{device['profile']}"
                keys[(device["pool"], device["name"])] = (node, key)
    return keys

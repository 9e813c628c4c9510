"""Did a pod's last run fail on broken hardware? Pure: the pod and what the cluster says about its devices, as the
API serves them; no Django.

A run is credited when the pod is Failed and at least one of these says one of its devices was unhealthy
(kubernetes/api tags kubernetes-1.34.0 to 1.37.0-beta.0):

1. **DRA device taints** on a device its claims were allocated: a taint in the driver's ResourceSlice
   (`spec.devices[].taints[]`, `resource/v1/types.go` `Device.Taints`, `DeviceTaint{key, value, effect,
   timeAdded}`), or a `DeviceTaintRule` whose `spec.deviceSelector` (`driver`, `pool`, `device`) matches it
   (`resource.k8s.io/v1alpha3` in 1.34 and 1.35, `v1beta2` from 1.36, `v1` in 1.37). Only the effects that keep
   work off the device count, `NoSchedule` and `NoExecute`: `None` is informational, and unknown effects are to
   be treated like `None` (the API's own rule). The NVIDIA DRA driver's health checks
   (dra-driver-nvidia-gpu v0.4.1, `cmd/gpu-kubelet-plugin/device_health.go`) taint `gpu.nvidia.com/xid`
   (NoSchedule for a fatal XID, None otherwise) and `gpu.nvidia.com/gpu-lost` (NoSchedule). A taint added well
   after the run ended (`timeAdded` later than the end plus TAINT_GRACE, e.g. maintenance) does not count.
2. **The kubelet's device health** on the pod (KEP-4680, feature gate `ResourceHealthStatus`):
   `status.containerStatuses[].allocatedResourcesStatus[]` (`core/v1/types.go` `ResourceStatus{name,
   resources[]{resourceID, health}}`), a resource `Unhealthy`; for device plugins and DRA alike.
3. **The device plugin's unhealthy devices as the node reports them**: the kubelet leaves a device the plugin
   calls unhealthy out of `status.allocatable` while `status.capacity` still counts it, so a node whose
   allocatable of a resource the pod used is below its capacity has an unhealthy device of that kind (which one,
   only the kubelet's health status above says).

The credited run is the pod's last one: from the latest `startedAt` of its containers' current terminated state
(a restarted container's earlier runs are in `lastState`) to the end of the pod's GPU time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable, Mapping

from ..ingest import parse_time

UNHEALTHY_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
TAINT_GRACE = timedelta(minutes=10)  # a health check notices a fault shortly after the workload dies of it


@dataclass(frozen=True)
class Fault:
    """Why a run is credited: one line of plain words per piece of evidence."""

    run_started_at: datetime | None  # None: the status no longer says (the whole interval is the run)
    evidence: tuple[dict, ...] = field(default_factory=tuple)

    @property
    def reason(self) -> str:
        return "Failed on an unhealthy device: " + "; ".join(e["detail"] for e in self.evidence)


def taint_rules_by_device(rules: Iterable[Mapping]) -> list[tuple[dict, dict]]:
    """(selector, taint) of every DeviceTaintRule that selects something (no selector selects nothing)."""
    found = []
    for rule in rules:
        spec = rule.get("spec") or {}
        if spec.get("deviceSelector") is not None:
            found.append((spec["deviceSelector"] or {}, {**(spec.get("taint") or {}),
                                                          "rule": (rule.get("metadata") or {}).get("name", "")}))
    return found


def _selects(selector: Mapping, key: tuple[str, str, str]) -> bool:
    driver, pool, device = key
    return all(selector.get(name) in (None, value) for name, value in
               (("driver", driver), ("pool", pool), ("device", device)))


def _counts(taint: Mapping, ended_at: datetime) -> bool:
    if taint.get("effect") not in UNHEALTHY_EFFECTS:
        return False
    added = parse_time(taint.get("timeAdded"))
    return added is None or added <= ended_at + TAINT_GRACE


def last_run_start(status: Mapping) -> datetime | None:
    starts = [parse_time(((c.get("state") or {}).get("terminated") or {}).get("startedAt"))
              for c in status.get("containerStatuses") or []]
    starts = [s for s in starts if s]
    return max(starts) if starts else None


def _gpu_resources(pod: Mapping) -> set[str]:
    names = set()
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        names |= {n for n in {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
                  if n.startswith("nvidia.com/")}
    return names


def pod_fault(pod: Mapping, *, ended_at: datetime, devices: Iterable[tuple[str, str, str]] = (),
              slice_devices: Mapping[tuple[str, str, str], Mapping] | None = None,
              taint_rules: Iterable[tuple[dict, dict]] = (), node: Mapping | None = None) -> Fault | None:
    """The fault that explains a Failed pod's last run, or None (not failed, or nothing says its device was
    unhealthy). `devices`: (driver, pool, device) its claims were allocated; `slice_devices`: the drivers'
    ResourceSlice devices by that key; `taint_rules`: from taint_rules_by_device; `node`: the pod's node."""
    status = pod.get("status") or {}
    if status.get("phase") != "Failed":
        return None
    evidence: list[dict] = []
    for key in devices:
        where = "/".join(key)
        for taint in ((slice_devices or {}).get(key) or {}).get("taints") or []:
            if _counts(taint, ended_at):
                evidence.append({"source": "device_taint", "device": where,
                                 "detail": f"{where} tainted {taint.get('key')}={taint.get('value', '')} "
                                           f"({taint.get('effect')}) by its driver"})
        for selector, taint in taint_rules:
            if _selects(selector, key) and _counts(taint, ended_at):
                evidence.append({"source": "device_taint_rule", "device": where,
                                 "detail": f"{where} tainted {taint.get('key')}={taint.get('value', '')} "
                                           f"({taint.get('effect')}) by DeviceTaintRule {taint['rule']}"})
    for container in status.get("containerStatuses") or []:
        for resource in container.get("allocatedResourcesStatus") or []:
            for health in resource.get("resources") or []:
                if health.get("health") == "Unhealthy":
                    evidence.append({"source": "allocated_resources_status", "device": health.get("resourceID", ""),
                                     "detail": f"{resource.get('name')} {health.get('resourceID')} reported Unhealthy "
                                               "by the kubelet"})
    if node is not None:
        node_status = node.get("status") or {}
        capacity, allocatable = node_status.get("capacity") or {}, node_status.get("allocatable") or {}
        for name in sorted(_gpu_resources(pod)):
            have, usable = str(capacity.get(name, "")), str(allocatable.get(name, ""))
            if all(t.isascii() and t.isdigit() for t in (have, usable)) and int(usable) < int(have):
                node_name = (node.get("metadata") or {}).get("name", "")
                evidence.append({"source": "node_allocatable", "device": f"{node_name}/{name}",
                                 "detail": f"node {node_name} has {int(have) - int(usable)} of {have} {name} "
                                           "unhealthy (allocatable below capacity)"})
    if not evidence:
        return None
    return Fault(run_started_at=last_run_start(status), evidence=tuple(evidence))

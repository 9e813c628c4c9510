"""DRA in the simulated cluster: the resource-claim controller's and the scheduler's part, and a GPU fault.

* Claims from templates: a pod's `spec.resourceClaims[].resourceClaimTemplateName` gets a ResourceClaim of its own,
  named `<pod>-<claim>-<suffix>`, owned by the pod, with the template's `spec.metadata` labels and the
  `resource.kubernetes.io/pod-claim-name` annotation, and the pod's `status.resourceClaimStatuses[]` names it
  (kubernetes v1.35 pkg/controller/resourceclaim/controller.go; kubernetes/api core/v1 `PodResourceClaimStatus`).
* Allocation when the pod is bound: devices of the node's ResourceSlices (the NVIDIA driver's pool is the node)
  that no running pod's claim holds, that carry no NoSchedule/NoExecute taint, and that match the DeviceClass's and
  the request's CEL selectors; `exactly` requests take `count` of them, `firstAvailable` the first subrequest that
  fits. The claim's `status.allocation.devices.results[]` gets `{request, driver, pool, device}` (`request` is
  `<request>/<subrequest>` for a subrequest) and `nodeSelector`, `status.reservedFor[]` the pod (kubernetes/api
  resource/v1/types.go `AllocationResult`, `DeviceRequestAllocationResult`, `ResourceClaimConsumerReference`,
  tags kubernetes-1.34.0 to 1.36.0). A node whose devices cannot satisfy every claim is rejected with
  kube-scheduler's "cannot allocate all claims" (pkg/scheduler/framework/plugins/dynamicresources, v1.34).
* The CEL the portal and the NVIDIA driver's DeviceClasses write, and no more: clauses joined by `&&` comparing
  `device.driver` or a string attribute with `==`, `startsWith`, an attribute's presence (`'x' in ...`) and a
  version's `.major()`. Anything else selects nothing, as a CEL error aborts an allocation.
* A GPU fault (`fail_device`): the NVIDIA DRA driver's health check taints the device (`gpu.nvidia.com/xid`,
  NoSchedule; dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/device_health.go), the pods holding it fail,
  and the kubelet reports the device Unhealthy in their `allocatedResourcesStatus` (KEP-4680).
"""
from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

RESOURCE = "resource.k8s.io/v1"
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
TERMINAL = ("Succeeded", "Failed")
_ATTR = r"device\.attributes\['(?P<domain>[^']+)'\]\.(?P<name>\w+)"
_CLAUSES = (
    (re.compile(r"^device\.driver == '(?P<value>[^']*)'$"), "driver"),
    (re.compile(rf"^{_ATTR} == '(?P<value>[^']*)'$"), "equals"),
    (re.compile(rf"^{_ATTR}\.startsWith\('(?P<value>[^']*)'\)$"), "starts"),
    (re.compile(r"^'(?P<name>\w+)' in device\.attributes\['(?P<domain>[^']+)'\]$"), "present"),
    (re.compile(rf"^{_ATTR}\.major\(\) (?P<op>>=|==) (?P<value>\d+)$"), "major"),
)


def _attribute(device: Mapping, driver: str, domain: str, name: str):
    attributes = device.get("attributes") or {}
    value = attributes.get(f"{domain}/{name}") or (attributes.get(name) if domain == driver else None)
    return next(iter(value.values())) if isinstance(value, dict) and value else None


def matches(expression: str, device: Mapping, driver: str) -> bool:
    for clause in (c.strip() for c in expression.split("&&")):
        for pattern, kind in _CLAUSES:
            found = pattern.match(clause)
            if found:
                break
        else:
            return False
        if kind == "driver":
            ok = driver == found["value"]
        else:
            value = _attribute(device, driver, found["domain"], found["name"])
            if kind == "equals":
                ok = value == found["value"]
            elif kind == "starts":
                ok = isinstance(value, str) and value.startswith(found["value"])
            elif kind == "present":
                ok = value is not None
            else:
                major = int(str(value).split(".")[0]) if value else -1
                ok = major >= int(found["value"]) if found["op"] == ">=" else major == int(found["value"])
        if not ok:
            return False
    return True


def _selected(device: Mapping, driver: str, selectors: Sequence[Mapping]) -> bool:
    return all(matches((s.get("cel") or {}).get("expression", ""), device, driver) for s in selectors)


def _held(fake) -> set[tuple[str, str, str]]:
    """Devices allocated to a claim some unfinished pod still uses."""
    live = {p["metadata"]["uid"] for p in fake.find("v1", "Pod") if p["status"].get("phase") not in TERMINAL}
    held = set()
    for claim in fake.find(RESOURCE, "ResourceClaim"):
        status = claim.get("status") or {}
        if any(r.get("uid") in live for r in status.get("reservedFor") or []):
            for result in ((status.get("allocation") or {}).get("devices") or {}).get("results") or []:
                held.add((result["driver"], result["pool"], result["device"]))
    return held


def _free(fake, node: str, held: set) -> list[tuple[str, str, dict]]:
    free = []
    for slice_ in fake.find(RESOURCE, "ResourceSlice"):
        spec = slice_["spec"]
        if spec.get("nodeName") != node:
            continue
        for device in spec.get("devices") or []:
            key = (spec["driver"], spec["pool"]["name"], device["name"])
            if key not in held and not any(t.get("effect") in BLOCKING_EFFECTS for t in device.get("taints") or []):
                free.append((spec["driver"], spec["pool"]["name"], device))
    return free


def _allocate(spec: Mapping, free: list, classes: Mapping[str, Mapping]) -> list[dict] | None:
    results, taken = [], set()
    for request in (spec.get("devices") or {}).get("requests") or []:
        options = [(request["name"], request["exactly"])] if request.get("exactly") else [
            (f"{request['name']}/{sub['name']}", sub) for sub in request.get("firstAvailable") or []]
        for name, wanted in options:
            selectors = [*((classes.get(wanted.get("deviceClassName")) or {}).get("spec") or {}).get("selectors", []),
                         *(wanted.get("selectors") or [])]
            fits = [(d, p, dev) for d, p, dev in free
                    if (d, p, dev["name"]) not in taken and _selected(dev, d, selectors)]
            count = len(fits) if wanted.get("allocationMode") == "All" else int(wanted.get("count", 1))
            if fits and len(fits) >= count:
                for driver, pool, device in fits[:count]:
                    taken.add((driver, pool, device["name"]))
                    results.append({"request": name, "driver": driver, "pool": pool, "device": device["name"]})
                break
        else:
            return None
    return results


def _pending_claims(fake, pod: Mapping) -> list[tuple[str, dict]]:
    """(pod claim name, claim spec) of the template claims the pod still needs."""
    namespace = pod["metadata"]["namespace"]
    wanted = []
    for entry in pod["spec"].get("resourceClaims") or []:
        template = entry.get("resourceClaimTemplateName")
        if not template:  # a claim named in the pod: allocated by whoever made it, not simulated
            continue
        found = fake.get(RESOURCE, "ResourceClaimTemplate", template, namespace)
        wanted.append((entry["name"], found["spec"] if found else None))
    return wanted


def plan(fake, pod: Mapping, node: str, *, held: set | None = None) -> list[tuple[str, dict, list]] | None:
    """(pod claim name, template spec, results) per claim of the pod if `node` can satisfy all; else None."""
    classes = {c["metadata"]["name"]: c for c in fake.find(RESOURCE, "DeviceClass")}
    free = _free(fake, node, _held(fake) if held is None else held)
    planned = []
    for name, template in _pending_claims(fake, pod):
        if template is None:
            return None
        results = _allocate(template.get("spec") or {}, free, classes)
        if results is None:
            return None
        used = {(r["driver"], r["pool"], r["device"]) for r in results}
        free = [f for f in free if (f[0], f[1], f[2]["name"]) not in used]
        planned.append((name, template, results))
    return planned


def uses_claims(pod: Mapping) -> bool:
    return bool(pod["spec"].get("resourceClaims"))


def feasible(fake, pod: Mapping, nodes: Sequence[Mapping]) -> list[Mapping]:
    """The nodes whose devices can satisfy every claim of the pod (all of them for a pod without claims)."""
    if not uses_claims(pod):
        return list(nodes)
    held = _held(fake)
    return [n for n in nodes if plan(fake, pod, n["metadata"]["name"], held=held) is not None]


def no_devices_message(total: int) -> str:
    return (f"0/{total} nodes are available: {total} cannot allocate all claims. preemption: 0/{total} nodes are "
            f"available: {total} Preemption is not helpful for scheduling.")


def bind_claims(fake, pod: Mapping, node: str) -> list[dict]:
    """Create and allocate the pod's claims on `node`; returns its `status.resourceClaimStatuses`."""
    statuses = []
    meta = pod["metadata"]
    for name, template, results in plan(fake, pod, node) or []:
        claim_name = f"{meta['name']}-{name}-{uuid.uuid4().hex[:5]}"[:253]
        fake.put({
            "apiVersion": RESOURCE, "kind": "ResourceClaim",
            "metadata": {"name": claim_name, "namespace": meta["namespace"],
                         "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                         "annotations": {POD_CLAIM_ANNOTATION: name},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                              "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "spec": template.get("spec") or {},
            "status": {"allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                       "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}]},
        })
        statuses.append({"name": name, "resourceClaimName": claim_name})
    return statuses


def fail_device(fake, *, driver: str, pool: str, device: str, at: str, xid: int = 79) -> list[str]:
    """A fatal XID on one device: its driver taints it, the pods whose claims hold it fail and report it
    Unhealthy. Returns the names of the pods that failed."""
    for slice_ in fake.find(RESOURCE, "ResourceSlice"):
        spec = slice_["spec"]
        if (spec["driver"], spec["pool"]["name"]) != (driver, pool):
            continue
        devices = [dict(d, taints=[*(d.get("taints") or []), {"key": f"{driver}/xid", "value": str(xid),
                                                               "effect": "NoSchedule", "timeAdded": at}])
                   if d["name"] == device else d for d in spec["devices"]]
        fake.put({**slice_, "spec": {**spec, "devices": devices}})
    holders = {}
    for claim in fake.find(RESOURCE, "ResourceClaim"):
        status = claim.get("status") or {}
        for result in ((status.get("allocation") or {}).get("devices") or {}).get("results") or []:
            if (result["driver"], result["pool"], result["device"]) == (driver, pool, device):
                for consumer in status.get("reservedFor") or []:
                    holders[consumer["uid"]] = (claim["metadata"]["annotations"].get(POD_CLAIM_ANNOTATION, ""),
                                                result["request"])
    failed = []
    for pod in fake.find("v1", "Pod"):
        if pod["metadata"]["uid"] not in holders or pod["status"].get("phase") != "Running":
            continue
        claim, request = holders[pod["metadata"]["uid"]]
        health = [{"name": f"claim:{claim}/{request}",
                   "resources": [{"resourceID": f"{driver}/{pool}/{device}", "health": "Unhealthy"}]}]
        fake.patch_status("v1", "Pod", pod["metadata"]["name"], pod["metadata"]["namespace"], {
            "phase": "Failed",
            "containerStatuses": [{**s, "ready": False, "started": False, "allocatedResourcesStatus": health,
                                   "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": at,
                                                            "startedAt": s["state"]["running"]["startedAt"]}}}
                                  for s in pod["status"].get("containerStatuses") or []]})
        failed.append(pod["metadata"]["name"])
    return failed

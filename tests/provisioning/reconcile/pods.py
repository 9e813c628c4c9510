"""Realistic Pod objects for the portal's workloads, as the Job and ReplicaSet controllers create them and the
scheduler and kubelet move them through their phases.

`pod_for()` builds a Pod from a rendered workload (its pod template: the portal's labels, annotations and spec),
with the name, uid, owner reference and Job index a controller sets. The phase helpers return JSON merge patches
(spec.nodeName + the whole status, as the API server stores them) to apply with `fake_kube.patch(...)` or with
`moved()` on a dict. Times are given, never read from the clock.
"""
from __future__ import annotations

import copy
import hashlib
import uuid
from datetime import datetime, timedelta

UNSCHEDULABLE_MESSAGE = (
    "0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/12 nodes are available: 4 No preemption victims found for incoming pod, 8 Preemption is not "
    "helpful for scheduling."
)
JOB_INDEX = "batch.kubernetes.io/job-completion-index"


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _hex(*parts: object, length: int = 10) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:length]


def workload_of(objects: list[dict]) -> dict:
    """The Job or Deployment among a request's rendered (or applied) objects."""
    return next(o for o in objects if o["kind"] in ("Job", "Deployment"))


def pod_for(workload: dict, *, index: int, created: datetime, attempt: int = 0, uid: str | None = None) -> dict:
    """The pod a controller creates for `workload` (a Job or Deployment dict, with metadata.uid when applied)."""
    meta, template = workload["metadata"], workload["spec"]["template"]
    labels = dict(template["metadata"].get("labels") or {})
    annotations = dict(template["metadata"].get("annotations") or {})
    if workload["kind"] == "Job":
        name = f"{meta['name']}-{index}-{_hex(meta['name'], index, attempt, length=5)}"
        labels.update({JOB_INDEX: str(index), "batch.kubernetes.io/job-name": meta["name"],
                       "batch.kubernetes.io/controller-uid": meta.get("uid", "")})
        annotations[JOB_INDEX] = str(index)
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta.get("uid", ""),
                 "controller": True, "blockOwnerDeletion": True}
        hostname = {"hostname": f"{meta['name']}-{index}"}
    else:
        replica_set = f"{meta['name']}-{_hex(meta['name'], length=10)}"
        name = f"{replica_set}-{_hex(meta['name'], index, attempt, length=5)}"
        labels["pod-template-hash"] = _hex(meta["name"], length=10)
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set,
                 "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, meta.get("uid", "") + replica_set)),
                 "controller": True, "blockOwnerDeletion": True}
        hostname = {}
    spec = copy.deepcopy(template["spec"])
    spec.update({"schedulerName": spec.get("schedulerName", "default-scheduler"), "dnsPolicy": "ClusterFirst",
                 "terminationGracePeriodSeconds": 30, "serviceAccountName": "default", "priority": 0,
                 "preemptionPolicy": "PreemptLowerPriority", "enableServiceLinks": False,
                 "tolerations": spec.get("tolerations", []) + [
                     {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                      "tolerationSeconds": 300},
                     {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                      "tolerationSeconds": 300}],
                 **hostname})  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{meta['namespace']}/{name}")),
            "creationTimestamp": ts(created),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def _container_status(pod: dict, state: dict, *, ready: bool, restarts: int = 0, last: dict | None = None) -> list:
    container = pod["spec"]["containers"][0]
    image, started = container["image"], "waiting" not in state
    status = {
        "name": container["name"],
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{_hex(image, length=64)}" if started else "",
        "containerID": f"containerd://{_hex(pod['metadata']['uid'], restarts, length=64)}" if started else "",
        "ready": ready,
        "started": "running" in state,
        "restartCount": restarts,
        "state": state,
        "lastState": {"terminated": last} if last else {},
    }
    return [{k: v for k, v in status.items() if v != ""}]


def _conditions(at: datetime, *, scheduled: bool, initialized: bool, ready: bool) -> list[dict]:
    def condition(kind: str, ok: bool) -> dict:
        return {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None,
                "lastTransitionTime": ts(at)}

    found = [condition("PodReadyToStartContainers", initialized), condition("Initialized", initialized),
             condition("Ready", ready), condition("ContainersReady", ready), condition("PodScheduled", scheduled)]
    for item in found:
        if item["status"] == "False" and item["type"] in ("Ready", "ContainersReady"):
            item["reason"] = "ContainersNotReady"
            item["message"] = "containers with unready status: [main]"
    return found


def _node_ip(node: str) -> str:
    return f"10.0.{int(_hex(node, length=2), 16) % 200}.{int(_hex(node, 'ip', length=2), 16) % 250 + 2}"


def unschedulable(pod: dict, at: datetime, message: str = UNSCHEDULABLE_MESSAGE) -> dict:
    return {"status": {"phase": "Pending", "qosClass": "Burstable", "conditions": [{
        "type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": ts(at),
        "reason": "Unschedulable", "message": message}]}}  # fmt: skip


def _scheduled_status(pod: dict, node: str, at: datetime, phase: str) -> dict:
    ip = _node_ip(node)
    pod_ip = f"10.244.{int(_hex(pod['metadata']['name'], length=2), 16)}.{int(_hex(node, length=2), 16) % 250 + 2}"
    return {"phase": phase, "qosClass": "Burstable", "hostIP": ip, "hostIPs": [{"ip": ip}], "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}], "startTime": ts(at)}  # fmt: skip


def image_pull_backoff(pod: dict, node: str, at: datetime, reason: str = "ImagePullBackOff") -> dict:
    image = pod["spec"]["containers"][0]["image"]
    message = (f'Back-off pulling image "{image}": ErrImagePull: failed to pull and unpack image "{image}": failed to '
               f'resolve reference "{image}": {image}: not found')
    status = _scheduled_status(pod, node, at, "Pending")
    status["conditions"] = _conditions(at, scheduled=True, initialized=True, ready=False)
    status["containerStatuses"] = _container_status(pod, {"waiting": {"reason": reason, "message": message}},
                                                    ready=False)
    return {"spec": {"nodeName": node}, "status": status}


def running(pod: dict, node: str, at: datetime, *, ready: bool = True, restarts: int = 0,
            last: dict | None = None) -> dict:
    status = _scheduled_status(pod, node, at, "Running")
    status["conditions"] = _conditions(at, scheduled=True, initialized=True, ready=ready)
    status["containerStatuses"] = _container_status(pod, {"running": {"startedAt": ts(at)}}, ready=ready,
                                                    restarts=restarts, last=last)
    return {"spec": {"nodeName": node}, "status": status}


def oom_killed_then_running(pod: dict, node: str, started: datetime, killed: datetime, restarts: int = 1) -> dict:
    last = {"exitCode": 137, "reason": "OOMKilled", "startedAt": ts(started), "finishedAt": ts(killed),
            "containerID": f"containerd://{_hex(pod['metadata']['uid'], 'oom', length=64)}"}
    return running(pod, node, killed + timedelta(seconds=10), restarts=restarts, last=last)


def terminated(pod: dict, node: str, started: datetime, finished: datetime, *, exit_code: int = 0,
               reason: str = "Completed", message: str = "") -> dict:
    phase = "Succeeded" if exit_code == 0 else "Failed"
    status = _scheduled_status(pod, node, started, phase)
    status["conditions"] = _conditions(finished, scheduled=True, initialized=True, ready=False)
    for item in status["conditions"]:
        if item["type"] in ("Ready", "ContainersReady"):
            item["reason"] = "PodCompleted"
            item.pop("message", None)
    state = {"exitCode": exit_code, "reason": reason, "startedAt": ts(started), "finishedAt": ts(finished),
             "containerID": f"containerd://{_hex(pod['metadata']['uid'], length=64)}"}
    if message:
        state["message"] = message
    status["containerStatuses"] = _container_status(pod, {"terminated": state}, ready=False)
    return {"spec": {"nodeName": node}, "status": status}


def evicted(pod: dict, node: str, started: datetime, at: datetime) -> dict:
    message = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 91344Ki. Container main "
               "was using 130Gi, request is 64Gi, has larger consumption of memory.")
    patch = terminated(pod, node, started, at, exit_code=137, reason="Error")
    patch["status"].update({"phase": "Failed", "reason": "Evicted", "message": message})
    patch["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                                          "lastTransitionTime": ts(at), "reason": "TerminationByKubelet",
                                          "message": message})  # fmt: skip
    return patch


def moved(pod: dict, patch: dict) -> dict:
    """The pod with a phase patch applied (as the API server's JSON merge patch would)."""
    result = copy.deepcopy(pod)
    result["spec"].update(patch.get("spec", {}))
    result["status"] = copy.deepcopy(patch["status"])
    return result


def rendered_workload(shape: str = "training_gang", *, request_id: int = 1, backend: str = "volcano",
                      strategy: str = "whole_gpu", label_domain: str = "gpu-portal.io") -> dict:
    """The Job or Deployment the renderer makes for one of the matrix's request shapes (training_gang: 4 replicas
    of 2 GPUs, inference: 2 replicas, development: 1), with the uid an API server would give it. No database."""
    from provisioning.manifests import render_all
    from provisioning.manifests.spec import ClusterProfile
    from tests.provisioning.manifests.matrix import make_pool, make_request, make_team

    strategy_name, pool = make_pool(strategy, "plain")
    request = make_request(strategy_name, shape, backend, "plain", request_id=request_id)
    cluster = ClusterProfile(name="gpu-east", kubernetes_version="1.35", scheduling_model="device_plugin",
                             gang_scheduler=backend, pool=pool, gang_queue="research", label_domain=label_domain)
    workload = copy.deepcopy(workload_of(render_all(make_team(), request, cluster)))
    workload["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"workload/{label_domain}/{request_id}"))
    return workload

"""Synthetic pod objects shaped like the API server's JSON for portal pods: what the demo data, the tests and
the benchmarks feed through the real ingestion path. Pure functions, no Django."""
from __future__ import annotations

from datetime import datetime, timezone

from provisioning.contract import (CLUSTER, DEVICES, GPU_EQUIVALENTS, GPU_MODEL, MANAGED_BY, MANAGED_BY_KEY,
                                   MIG_PROFILE, NAME_KEY, REQUEST_ID, STRATEGY, TEAM, WORKLOAD_CLASS, domain_key)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def synthetic_pod(
    *,
    uid: str,
    name: str,
    namespace: str,
    label_domain: str,
    request_id: int | None,
    team: str,
    cluster: str,
    strategy: str,
    gpu_model: str,
    devices: int,
    equivalents: str,
    started_at: datetime | None,
    finished_at: datetime | None = None,
    mig_profile: str = "",
    workload_class: str = "inference",
    phase: str | None = None,
    image: str = "nvcr.io/nvidia/pytorch:25.01-py3",
    node: str = "gpu-node-1",
    restarted_at: datetime | None = None,
    deleting: bool = False,
    owner: tuple[str, str, str, str] | None = None,
) -> dict:
    """A pod with one GPU container. Running from `started_at`; finished at `finished_at` when given (phase
    Succeeded unless `phase` says otherwise). `restarted_at`: the container crashed and restarted then, so the
    original start is only in lastState. `started_at=None`: still pending, no container ran yet. `owner`: (apiVersion,
    kind, name, uid) of its controller, by default a ReplicaSet of its name's stem (which nothing the portal
    applied is, so such a pod is billed as found in the cluster)."""
    def key(name_in_domain: str) -> str:
        return domain_key(label_domain, name_in_domain)

    labels = {
        MANAGED_BY_KEY: MANAGED_BY,
        NAME_KEY: name.rsplit("-", 1)[0],
        key(TEAM): team,
        key(STRATEGY): strategy,
        key(WORKLOAD_CLASS): workload_class,
        key(CLUSTER): cluster,
    }
    if request_id is not None:
        labels[key(REQUEST_ID)] = str(request_id)
    annotations = {key(GPU_EQUIVALENTS): equivalents, key(GPU_MODEL): gpu_model, key(DEVICES): str(devices)}
    if mig_profile:
        annotations[key(MIG_PROFILE)] = mig_profile
    resource = (f"nvidia.com/mig-{mig_profile}" if strategy == "mig"
                else "nvidia.com/gpu.shared" if strategy in ("time_slicing", "mps") else "nvidia.com/gpu")
    container_status: dict = {
        "name": "main", "image": image, "imageID": f"{image}@sha256:{'0' * 64}", "ready": finished_at is None,
        "restartCount": 1 if restarted_at else 0, "started": finished_at is None,
        "containerID": f"containerd://{uid.replace('-', '')}",
    }
    if started_at is None:
        container_status["state"] = {"waiting": {"reason": "ContainerCreating"}}
        pod_phase = "Pending"
    else:
        run_start = restarted_at or started_at
        if finished_at is None:
            container_status["state"] = {"running": {"startedAt": rfc3339(run_start)}}
            pod_phase = "Running"
        else:
            container_status["state"] = {"terminated": {
                "exitCode": 0 if (phase or "Succeeded") == "Succeeded" else 1, "reason": "Completed",
                "startedAt": rfc3339(run_start), "finishedAt": rfc3339(finished_at)}}
            pod_phase = phase or "Succeeded"
        if restarted_at:
            container_status["lastState"] = {"terminated": {
                "exitCode": 137, "reason": "OOMKilled", "startedAt": rfc3339(started_at),
                "finishedAt": rfc3339(restarted_at)}}
    created = rfc3339(started_at) if started_at else "2026-01-01T00:00:00Z"
    api_version, kind, owner_name, owner_uid = owner or ("apps/v1", "ReplicaSet", name.rsplit("-", 1)[0], uid[::-1])
    metadata = {
        "name": name, "namespace": namespace, "uid": uid, "resourceVersion": "1", "creationTimestamp": created,
        "labels": labels, "annotations": annotations,
        "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": owner_name, "uid": owner_uid,
                             "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                           "time": created, "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}}}}],
    }
    if deleting:
        metadata["deletionTimestamp"] = rfc3339(finished_at or started_at)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [{
                "name": "main", "image": image, "command": ["python", "-m", "serve"],
                "resources": {"limits": {resource: str(devices)}, "requests": {resource: str(devices)}},
                "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}],
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "readOnly": True}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": node, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {
                "expirationSeconds": 3607, "path": "token"}}]}}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": pod_phase,
            "conditions": [{"type": "Ready", "status": "True" if pod_phase == "Running" else "False",
                            "lastProbeTime": None, "lastTransitionTime": created}],
            "hostIP": "10.0.0.10", "podIP": "10.244.1.23", "startTime": created, "qosClass": "Guaranteed",
            "containerStatuses": [container_status],
        },
    }

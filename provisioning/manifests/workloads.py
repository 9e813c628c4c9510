"""Builders of a request's workload objects: container, pod template, Job, Deployment, Services, PDB.

training    -> Indexed Job (one pod per rank, stable hostnames) + headless Service for rendezvous
inference   -> Deployment + Service + PodDisruptionBudget
development -> single-replica Deployment
"""

from __future__ import annotations

from gpu.vocabulary import MPS

from .affinity import build_affinity
from .context import RenderContext
from .devices import GpuPlacement, wants_mps_config
from .gang import GangWiring
from .labels import selector_for_request
from .priority import owner_labels, pod_priority
from .sizing import host_resources

CONTAINER_NAME = "main"
RENDEZVOUS_PORT = 29500  # torch.distributed default (MASTER_PORT)
HTTP_PORT = 8000  # vLLM, Triton and TGI serve HTTP on 8000 by default
# A few retries for crashes; preemption and node drains do not count (podFailurePolicy below).
TRAINING_BACKOFF_LIMIT = 3
SHM_VOLUME = "dshm"


def mps_daemon_shm(ctx: RenderContext) -> bool:
    """Is the pod's /dev/shm the MPS control daemon's? The device plugin mounts the daemon's shared memory there for
    every MPS share (k8s-device-plugin v0.20.0 `internal/plugin/mps.go` updateReponse, `cmd/mps-control-daemon/mps/
    daemon.go` ShmDir), the DRA driver for a claim with an MPS config (dra-driver-nvidia-gpu v0.4.1
    `cmd/gpu-kubelet-plugin/sharing.go`, its CDI mounts). A volume of the pod's own at /dev/shm would hide it and
    the clients could not reach the server, so such a pod gets none: its shared memory is the daemon's."""
    if ctx.request.strategy != MPS:
        return False
    return ctx.cluster.scheduling_model != "dra" or wants_mps_config(ctx)


def build_container_security_context() -> dict:
    # runAsNonRoot is not forced: most CUDA/NGC images run as root inside the container.
    return {"allowPrivilegeEscalation": False, "privileged": False, "capabilities": {"drop": ["ALL"]}}


def build_resources(ctx: RenderContext, placement: GpuPlacement) -> dict:
    host = host_resources(ctx.request)
    memory = f"{host.memory_gi}Gi"
    resources = {
        "requests": {"cpu": str(host.cpu), "memory": memory},
        "limits": {"memory": memory, **placement.limits},
    }
    if placement.container_claims:
        resources["claims"] = [dict(claim) for claim in placement.container_claims]
    return resources


def build_training_env(ctx: RenderContext, job_name: str, service: str) -> list[dict]:
    """Rendezvous for torchrun-style launchers: rank 0's stable DNS name through the headless Service."""
    return [
        {"name": "MASTER_ADDR", "value": f"{job_name}-0.{service}.{ctx.namespace}.svc"},
        {"name": "MASTER_PORT", "value": str(RENDEZVOUS_PORT)},
        {"name": "NNODES", "value": str(ctx.request.replicas)},
        {"name": "NPROC_PER_NODE", "value": str(ctx.request.gpus_per_replica)},
        {
            "name": "NODE_RANK",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
            },
        },
    ]


def build_inference_readiness_probe() -> dict:
    """Traffic only once the server listens. TCP, not HTTP: vLLM, TGI and Triton name their health paths
    differently. No liveness probe: restarting a GPU server that is slow (or still loading a model) costs the
    whole load again, and an open port says nothing more about a hung one than a running process does."""
    return {"tcpSocket": {"port": "http"}, "periodSeconds": 10, "failureThreshold": 3}


def build_container(
    ctx: RenderContext,
    placement: GpuPlacement,
    *,
    env: list[dict] | None = None,
    ports: list[dict] | None = None,
    readiness: dict | None = None,
) -> dict:
    # Always: the kubelet asks the registry for the tag's digest on every start (layers stay cached), so a pod
    # of one team never runs another team's private image from the node's cache without the registry's consent.
    container = {"name": CONTAINER_NAME, "image": ctx.request.image, "imagePullPolicy": "Always"}
    if ctx.request.command:
        container["command"] = list(ctx.request.command)
    if env:
        container["env"] = env
    if ports:
        container["ports"] = ports
    if readiness:
        container["readinessProbe"] = readiness
    container["resources"] = build_resources(ctx, placement)
    container["securityContext"] = build_container_security_context()
    if not mps_daemon_shm(ctx):
        container["volumeMounts"] = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]
    return container


def build_pod_template(
    ctx: RenderContext,
    placement: GpuPlacement,
    container: dict,
    *,
    restart_policy: str,
    gang: GangWiring | None = None,
    subdomain: str | None = None,
) -> dict:
    labels = dict(ctx.labels)
    annotations = dict(ctx.pod_annotations)
    spec = {
        "restartPolicy": restart_policy,
        "containers": [container],
        # Workloads do not talk to the Kubernetes API, and service env vars only collide with user env.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    if not mps_daemon_shm(ctx):
        spec["volumes"] = [
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": f"{host_resources(ctx.request).shm_gi}Gi"}}
        ]
    if subdomain:
        spec["subdomain"] = subdomain
    if placement.node_selector:
        spec["nodeSelector"] = dict(placement.node_selector)
    affinity = build_affinity(ctx)
    if affinity:
        spec["affinity"] = affinity
    if placement.tolerations:
        spec["tolerations"] = [dict(t) for t in placement.tolerations]
    if placement.pod_claims:
        spec["resourceClaims"] = [dict(c) for c in placement.pod_claims]
    if gang:
        labels.update(gang.pod_labels)
        annotations.update(gang.pod_annotations)
        spec.update(gang.pod_spec)
    priority_labels, priority_annotations, priority_spec = pod_priority(ctx)
    labels.update(priority_labels)
    annotations.update(priority_annotations)
    spec.update(priority_spec)
    return {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec}


def build_headless_service(ctx: RenderContext, name: str) -> dict:
    """Gives each Indexed Job pod a DNS name `<job>-<index>.<service>` before it is ready (rendezvous)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(name),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector_for_request(ctx.request.request_id, ctx.domain),
            "ports": [
                {"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT, "protocol": "TCP"}
            ],
        },
    }


def build_job(ctx: RenderContext, name: str, template: dict, gang: GangWiring | None) -> dict:
    metadata = ctx.metadata(name)
    spec = {
        "completionMode": "Indexed",
        "completions": ctx.request.replicas,
        "parallelism": ctx.request.replicas,
        "backoffLimit": TRAINING_BACKOFF_LIMIT,
        "podFailurePolicy": {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
        },
        # Start a replacement only once the old pod is gone: both would hold the same rank and its GPUs.
        "podReplacementPolicy": "Failed",
        "template": template,
    }
    metadata["labels"].update(owner_labels(ctx))
    if gang:
        metadata["labels"].update(gang.job_labels)
        if gang.job_annotations:
            metadata.setdefault("annotations", {}).update(gang.job_annotations)
        spec.update(gang.job_spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def build_service(ctx: RenderContext, name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.metadata(name),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_for_request(ctx.request.request_id, ctx.domain),
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def build_pod_disruption_budget(ctx: RenderContext, name: str) -> dict:
    """One replica at a time may be evicted. maxUnavailable (not minAvailable) so a one-replica service never
    blocks a node drain forever; crash-looping pods may always be evicted."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": ctx.metadata(name),
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": selector_for_request(ctx.request.request_id, ctx.domain)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


def build_deployment(
    ctx: RenderContext, name: str, template: dict, *, replicas: int, rolling: bool, gang: GangWiring | None = None
) -> dict:
    """`gang`: only its workload labels apply (a Kueue queue, a KAI queue); a Deployment has no suspend."""
    metadata = ctx.metadata(name)
    if gang:
        metadata["labels"].update(gang.job_labels)
    if rolling:
        # maxSurge 0: a rollout never needs a spare GPU the team's quota may not have.
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    else:
        strategy = {"type": "Recreate"}
    metadata["labels"].update(owner_labels(ctx))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 3,
            "selector": {"matchLabels": selector_for_request(ctx.request.request_id, ctx.domain)},
            "strategy": strategy,
            "template": template,
        },
    }

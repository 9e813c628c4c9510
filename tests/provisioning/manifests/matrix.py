"""The render matrix shared by the tests and `bench/render.py`: every workload class x sharing strategy x
scheduling model x gang backend x Kubernetes version x isolation variant, as plain spec objects.

No Django, no database: the benchmark imports this module too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from provisioning.manifests.spec import (ClusterProfile, GangSpec, NetworkPeer, PoolProfile, PrioritySpec, RequestSpec,
                                         TeamSpec)

VERSIONS = ("1.34", "1.35", "1.36", "1.37")
SCHEDULING_MODELS = ("device_plugin", "dra")
BACKENDS = ("volcano", "kai", "kueue", "native", "none")
SHAPES = ("training_gang", "training_single", "inference", "development")
VARIANTS = ("plain", "shared_driver", "exclusive_clique_driver", "exclusive_host")
NVLINK_DOMAIN = "7b968a6d-1d1e-4c3f-9a1b-5d0c2c1e9f00.1"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# Declared on the clusters of every isolation variant but "plain" (which declares neither).
INGRESS_CONTROLLER = NetworkPeer(
    namespace="ingress-nginx",
    pod_labels={"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"},
)
# What the platform turns on for the native gang (KEP-4671: two alpha gates until 1.37 merges them).
NATIVE_GATES = {"1.35": ("GenericWorkload", "GangScheduling"), "1.36": ("GenericWorkload", "GangScheduling"),
                "1.37": ("GenericWorkload",)}
METRICS_SCRAPER = NetworkPeer(namespace="monitoring", pod_labels={"app.kubernetes.io/name": "prometheus"})

# Strategy variants: (request strategy, pool) on H200 nodes.
POOLS = {
    "whole_gpu": ("whole_gpu", PoolProfile(name="h200-whole", gpu_product="NVIDIA-H200", sharing_mode="exclusive")),
    "mig_mixed": (
        "mig",
        PoolProfile(
            name="h200-mig",
            gpu_product="NVIDIA-H200",
            sharing_mode="mig",
            mig_strategy="mixed",
            mig_layout="all-balanced",
            mig_ready_label=True,  # mig-manager configures it (kubesim's MIG nodes carry its state label)
        ),
    ),
    "mig_single": (
        "mig",
        PoolProfile(
            name="h200-mig-single",
            gpu_product="NVIDIA-H200",
            sharing_mode="mig",
            mig_strategy="single",
            mig_layout="all-1g.18gb",
            mig_ready_label=True,  # mig-manager configures it (kubesim's MIG nodes carry its state label)
        ),
    ),
    "ts_renamed": (
        "time_slicing",
        PoolProfile(
            name="h200-ts",
            gpu_product="NVIDIA-H200",
            sharing_mode="time_slicing",
            time_slicing_replicas=4,
            time_slicing_renamed=True,
            device_plugin_config="ts-4",
        ),
    ),
    "ts_plain": (
        "time_slicing",
        PoolProfile(
            name="h200-ts-plain",
            gpu_product="NVIDIA-H200",
            sharing_mode="time_slicing",
            time_slicing_replicas=4,
            time_slicing_renamed=False,
        ),
    ),
    "mps": (
        "mps",
        PoolProfile(
            name="h200-mps",
            gpu_product="NVIDIA-H200",
            sharing_mode="mps",
            time_slicing_replicas=4,
            time_slicing_renamed=True,
            device_plugin_config="mps-4",
            gpu_memory_mib=143771,
        ),
    ),
}
EQUIVALENTS = {"whole_gpu": "1", "mig": "0.142857", "time_slicing": "0.25", "mps": "0.25"}
# The shipped policy's priority per workload class (intake/default_policy.py), as the renderer receives it: every
# case renders its tier's PriorityClass, and a Kueue gang its WorkloadPriorityClass.
PRIORITIES = {
    "training": PrioritySpec(tier="training", value=10000, preemptible=True, grace_seconds=600,
                             min_runtime_minutes=120),
    "inference": PrioritySpec(tier="production-inference", value=100000, preemptible=False, grace_seconds=60),
    "development": PrioritySpec(tier="development", value=1000, preemptible=True, preempts=False, grace_seconds=300),
}
# 1.36 writes a native PodGroup's priority only where the cluster declares WorkloadAwarePreemption (priority.py).
NATIVE_PRIORITY_GATE = {"1.36": ("WorkloadAwarePreemption",)}


@dataclass(frozen=True)
class Case:
    id: str
    team: TeamSpec
    request: RequestSpec
    cluster: ClusterProfile
    error: str | None  # substring of the expected RenderError, None when it must render


def make_pool(strategy_variant: str, variant: str) -> tuple[str, PoolProfile]:
    strategy, pool = POOLS[strategy_variant]
    pool = replace(pool, node_selector={"node.kubernetes.io/instance-type": "p5e.48xlarge"}, taints=(TAINT,))
    if variant in ("shared_driver", "exclusive_clique_driver"):
        pool = replace(pool, nvlink_domain=NVLINK_DOMAIN)
    return strategy, pool


def make_request(strategy: str, shape: str, backend: str, variant: str, request_id: int = 1) -> RequestSpec:
    devices = 1 if strategy in ("time_slicing", "mps") else 2
    replicas = {"training_gang": 4, "training_single": 1, "inference": 2, "development": 1}[shape]
    workload_class = shape.split("_")[0]
    gang = GangSpec(min_members=replicas, backend=backend) if shape == "training_gang" else None
    equivalents = EQUIVALENTS[strategy]
    return RequestSpec(
        request_id=request_id,
        name=f"{workload_class}-{strategy.replace('_', '-')}",
        team="ml-research",
        cost_center="CC-4711 / Research",
        workload_class=workload_class,
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command=("sleep", "infinity") if workload_class == "development" else ("python", "main.py"),
        replicas=replicas,
        gpus_per_replica=devices,
        gpu_memory_gb=16.0,
        strategy=strategy,
        gpu_model="H200-141GB",
        gpu_product="NVIDIA-H200",
        dra_product_name="NVIDIA H200",
        mig_profile="1g.18gb" if strategy == "mig" else None,
        fabric_isolation="tenant_exclusive" if variant.startswith("exclusive") else "shared",
        gang=gang,
        driver_min_major=550 if variant.endswith("driver") else None,
        gpu_equivalents_per_replica=str(equivalents) if devices == 1 else f"{float(equivalents) * devices:.6f}",
        priority=PRIORITIES[workload_class],
    )


def make_team(scheduling_model: str = "device_plugin") -> TeamSpec:
    """16 whole GPUs, 2 time-sliced GPUs (8 shares of 4 on the device plugin), 2 GPUs of 1g.18gb slices: as
    provisioning.selectors.team_spec turns those quotas into caps for each scheduling model."""
    if scheduling_model == "dra":
        return TeamSpec(slug="ml-research", cost_center="CC-4711 / Research",
                        dra_devices={"gpu.nvidia.com": 18, "mig.nvidia.com": 14})
    return TeamSpec(
        slug="ml-research",
        cost_center="CC-4711 / Research",
        gpu_quota={"nvidia.com/gpu": 16, "nvidia.com/gpu.shared": 8, "nvidia.com/mig-1g.18gb": 14},
    )


def expected_error(shape: str, backend: str, version: str, strategy: str = "", model: str = "") -> str | None:
    if backend == "kueue" and model == "dra" and strategy == "mps":
        # Kueue admits every GPU workload of its cluster and takes no claim config: no MPS server, a plain whole GPU
        return "could not start an MPS server"
    if shape != "training_gang":
        return None
    if backend == "none":
        return "no gang scheduler"
    if backend == "native" and version == "1.34":
        return "no native gang scheduling"
    return None


def cases() -> list[Case]:
    found = []
    for n, (strategy_variant, model, backend, version, shape, variant) in enumerate(
        itertools.product(POOLS, SCHEDULING_MODELS, BACKENDS, VERSIONS, SHAPES, VARIANTS), start=1
    ):
        strategy, pool = make_pool(strategy_variant, variant)
        cluster = ClusterProfile(
            name="eu-west-gpu-1",
            kubernetes_version=version,
            scheduling_model=model,
            gang_scheduler=backend,
            pool=pool,
            gang_queue="research" if backend in ("kai", "volcano") else "",
            dra_mps_support=True,
            label_domain="gpu-portal.example.com",
            ingress_controller=None if variant == "plain" else INGRESS_CONTROLLER,
            metrics_scraper=None if variant == "plain" else METRICS_SCRAPER,
            # The native gang needs its (off by default) gates declared; their absence is tested on its own.
            feature_gates=(NATIVE_GATES.get(version, ()) + NATIVE_PRIORITY_GATE.get(version, ())
                           if backend == "native" else ()),
            admission_policies=True,  # every supported minor serves admissionregistration.k8s.io/v1 policies
        )
        found.append(
            Case(
                id=f"{strategy_variant}-{model}-{backend}-{version}-{shape}-{variant}",
                team=make_team(model),
                request=make_request(strategy, shape, backend, variant, request_id=n),
                cluster=cluster,
                error=expected_error(shape, backend, version, strategy, model),
            )
        )
    return found


def priority_object_count(case: Case) -> int:
    """The tier's PriorityClass, and a Kueue gang's WorkloadPriorityClass."""
    return 1 + (1 if case.request.gang and case.request.gang.backend == "kueue" else 0)


def expected_object_count(case: Case) -> int:
    """Objects render_all must return for a case, counted from the rules rather than from the renderer."""
    team_objects = 2 + (1 if case.cluster.gang_scheduler in ("kueue", "kai", "volcano") else 0)
    team_objects += 1 + (1 if case.cluster.ingress_controller else 0)  # default-deny, ingress-controller policies
    if case.cluster.admission_policies and case.cluster.gang_scheduler != "kueue":
        team_objects += 2  # ValidatingAdmissionPolicy + binding (issue 23 item 8)
    team_objects += priority_object_count(case)
    claim = 1 if case.cluster.scheduling_model == "dra" else 0
    workload_class = case.request.workload_class
    if workload_class == "training":
        gang = 0
        if case.request.gang:
            backend = case.request.gang.backend
            gang = {"volcano": 1, "kai": 1, "kueue": 0}.get(backend)
            if backend == "native":
                gang = 1 if case.cluster.kubernetes_version == "1.35" else 2
        return team_objects + claim + gang + 2  # headless Service + Job
    if workload_class == "inference":
        return team_objects + claim + 3  # Service + PDB + Deployment
    return team_objects + claim + 1  # Deployment

"""How a pod gets its GPUs: sharing strategy x scheduling model -> limits, node selection and DRA claims.

Device plugin (reference §1, §2): an extended resource in `limits` plus node labels written by GFD.
DRA (`resource.k8s.io/v1`, reference §4): a ResourceClaimTemplate, so every pod gets a claim of its own, selected
by CEL on the NVIDIA driver's device attributes. Never one ResourceClaim shared by the replicas: Kueue v0.19 refuses
pods that name a claim (`pkg/controller/core/workload_controller.go`, "DRA resource claims not supported"), a shared
claim pins every replica to the node holding its devices, and quota and billing would count its devices once per
pod. A time-sliced (or MPS) DRA request therefore holds its devices per replica, a whole GPU each: the v0.4.1 driver
publishes no `allowMultipleAllocations` (`cmd/gpu-kubelet-plugin/deviceinfo.go`), so no two claims share a device, and
its sharing settings only divide the device between the pod's own processes. The driver's `GpuConfig` time-slicing
settings are added only where the cluster declares the driver's `TimeSlicingSettings` gate (dra-driver-nvidia-gpu
v0.4.1 `api/nvidia.com/resource/v1beta1/validate.go` rejects them at prepare time otherwise); MPS (an uncapped MPS
server for the pod's processes) only where the cluster declares MPSSupport, and never under Kueue, which takes no
claim config: on a Kueue cluster every GPU workload goes through Kueue (gang.py), so DRA MPS is refused there. A DRA pod asks for `nvidia.com/gpu` only where the decision chose the DRAExtendedResource path (a
DeviceClass with `extendedResourceName`, KEP-5004): whole GPUs and MIG, not on Volcano (gangapi); the device plugin
must not manage the same node either way.

Time-slicing and MPS pods are pinned to nodes whose GFD label `nvidia.com/gpu.sharing-strategy` names their mode
(`time-slicing` / `mps`, k8s-device-plugin v0.20.0 `api/config/v1/sharing.go`). The device plugin's MPS config
has `failRequestsGreaterThanOne` on unless the config turns it off (v0.20.0 `api/config/v1/config.go`), so an
MPS pod asks for exactly one share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu import gangapi
from gpu.catalogue import parse_profile
from gpu.vocabulary import DRA, GFD_SHARING_STRATEGY, KUEUE, MPS, REPLICATED, SHARING_MODE_FOR_STRATEGY, TIME_SLICING

from .context import RenderContext
from .errors import RenderError
from .names import LABEL_VALUE, child_name

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
SHARING_STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"

DRA_DRIVER = "gpu.nvidia.com"
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
CLAIM_NAME = "gpu"  # pod-level claim entry and request name inside the claim
ATTR = "device.attributes['gpu.nvidia.com']"

POOL_MODE = SHARING_MODE_FOR_STRATEGY  # which pool sharing mode serves which request strategy


@dataclass
class GpuPlacement:
    """Everything the pod template needs to land on the right GPUs."""

    limits: dict[str, str] = field(default_factory=dict)  # extended resources (device plugin only)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict] = field(default_factory=list)
    pod_claims: list[dict] = field(default_factory=list)  # spec.resourceClaims
    container_claims: list[dict] = field(default_factory=list)  # containers[].resources.claims
    objects: list[dict] = field(default_factory=list)  # ResourceClaimTemplate / ResourceClaim
    gpu_resource: str | None = None  # extended resource name counted per pod (device plugin), for gang minimums


def gpu_placement(ctx: RenderContext) -> GpuPlacement:
    _check_pool(ctx)
    placement = _dra(ctx) if ctx.cluster.scheduling_model == DRA else _device_plugin(ctx)
    placement.tolerations = [build_toleration(taint) for taint in ctx.cluster.pool.taints]
    return placement


def _check_pool(ctx: RenderContext) -> None:
    request, pool = ctx.request, ctx.cluster.pool
    if pool.sharing_mode != POOL_MODE[request.strategy]:
        raise RenderError(
            f"Pool {pool.name} shares GPUs as {pool.sharing_mode!r} but the request asks for {request.strategy}; "
            "re-run placement or pick a pool with the matching sharing mode."
        )
    if pool.gpu_model and pool.gpu_model != request.gpu_model:
        raise RenderError(
            f"Pool {pool.name} has {pool.gpu_model} GPUs but the request was placed on {request.gpu_model}; "
            "re-run placement."
        )
    if not pool.gpu_model and pool.gpu_product and pool.gpu_product != request.gpu_product:
        raise RenderError(
            f"Pool {pool.name} has {pool.gpu_product} GPUs but the request was placed on {request.gpu_product}; "
            "re-run placement."
        )
    if request.strategy == "mig" and not request.mig_profile:
        raise RenderError("A MIG request needs a MIG profile (e.g. 1g.18gb); the decision carries none.")
    if request.strategy == MPS and ctx.cluster.scheduling_model == DRA and not ctx.cluster.dra_mps_support:
        raise RenderError(
            f"Cluster {ctx.cluster.name} does not declare the NVIDIA DRA driver's MPSSupport feature gate (alpha, off "
            "by default): the driver would refuse the claim's MPS config. Turn the gate on and declare it on the "
            "cluster, or place the request on a device-plugin MPS pool."
        )
    if request.strategy == MPS and ctx.cluster.scheduling_model == DRA and kueue_managed(ctx):
        raise RenderError(
            f"Request {request.name} asks for MPS, but on cluster {ctx.cluster.name} Kueue admits every GPU workload, "
            "and Kueue's DRA integration takes no claim config (kueue v0.19.2 docs, Dynamic Resource Allocation, "
            "Limitations): the claims could not start an MPS server and the pods would get plain whole GPUs. Ask "
            "for whole GPUs, or place the request on a device-plugin MPS pool."
        )
    if request.strategy == MPS and ctx.cluster.scheduling_model != DRA and request.gpus_per_replica != 1:
        raise RenderError(
            f"An MPS pod asks for one share; this request asks for {request.gpus_per_replica} per replica. The device "
            "plugin fails MPS requests for more than one share (failRequestsGreaterThanOne defaults to true for MPS)."
        )


def _product(ctx: RenderContext) -> str:
    """The product label to pin: the SKU the pool's nodes carry (an H200 NVL node says NVIDIA-H200-NVL, never the
    model's first SKU NVIDIA-H200), else the request's."""
    return ctx.cluster.pool.gpu_product or ctx.request.gpu_product


def build_toleration(taint: dict) -> dict:
    """Tolerate one of the pool's taints exactly (key, value, effect)."""
    toleration = {"key": taint["key"]}
    if taint.get("value") not in (None, ""):
        toleration.update(operator="Equal", value=str(taint["value"]))
    else:
        toleration["operator"] = "Exists"
    if taint.get("effect"):
        toleration["effect"] = taint["effect"]
    return toleration


def merge_selector(*selectors: dict[str, str], where: str) -> dict[str, str]:
    """Union of node selectors; two different values for one key can never match a node."""
    merged: dict[str, str] = {}
    for selector in selectors:
        for key, value in selector.items():
            if merged.get(key, value) != value:
                raise RenderError(
                    f"{where}: node label {key} must be both {merged[key]!r} and {value!r}; "
                    "fix the pool's node_selector."
                )
            merged[key] = value
    return merged


# --- device plugin ---------------------------------------------------------------------------------------------


def _device_plugin(ctx: RenderContext) -> GpuPlacement:
    request, pool = ctx.request, ctx.cluster.pool
    product = _product(ctx)
    if request.strategy == "whole_gpu":
        resource, labels = GPU, {}
    elif request.strategy == "mig":
        resource, labels, product = _mig_device_plugin(ctx)
    else:
        resource, labels, product = _shared_device_plugin(ctx)
    if product and LABEL_VALUE.match(product) and len(product) <= 63:
        labels[PRODUCT_LABEL] = product
    count = str(int(request.gpus_per_replica))
    return GpuPlacement(
        limits={resource: count},
        node_selector=merge_selector(pool.node_selector, labels, where=f"pool {pool.name}"),
        gpu_resource=resource,
    )


def _mig_device_plugin(ctx: RenderContext) -> tuple[str, dict[str, str], str | None]:
    request, pool = ctx.request, ctx.cluster.pool
    try:
        profile = parse_profile(request.mig_profile, max_instances=1)
    except ValueError as exc:
        raise RenderError(f"{request.mig_profile!r} is not a MIG profile name (expected e.g. 1g.18gb).") from exc
    if pool.mig_strategy == "mixed":
        # One resource per profile; '+me' becomes '.me' (MigProfileSpec.resource_name).
        return profile.resource_name, {MIG_STRATEGY_LABEL: "mixed"}, _product(ctx)
    if pool.mig_strategy == "single":
        if not pool.mig_layout:
            raise RenderError(
                f"Pool {pool.name} uses MIG strategy 'single' but has no mig_layout: under 'single' every slice is "
                "advertised as nvidia.com/gpu, so the pod must be pinned to nodes with the right nvidia.com/mig.config."
            )
        labels = {MIG_STRATEGY_LABEL: "single", MIG_CONFIG_LABEL: pool.mig_layout}
        # GFD renames the product to <product>-MIG-<profile> under 'single'; attribute profiles ('+me') have no
        # documented label form, so they rely on the layout pin alone.
        product = None if "+" in profile.name else f"{_product(ctx)}-MIG-{profile.name}"
        return GPU, labels, product
    raise RenderError(f"Pool {pool.name} has MIG strategy {pool.mig_strategy!r}; expected 'mixed' or 'single'.")


def _shared_device_plugin(ctx: RenderContext) -> tuple[str, dict[str, str], str]:
    """Time-slicing or MPS: replicas of whole GPUs, named and labelled the same way by both."""
    request, pool = ctx.request, ctx.cluster.pool
    labels = {SHARING_STRATEGY_LABEL: GFD_SHARING_STRATEGY[request.strategy]}
    if pool.device_plugin_config:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.device_plugin_config
    if pool.time_slicing_renamed:
        return GPU_SHARED, labels, _product(ctx)
    # Without renameByDefault the replicas keep the name nvidia.com/gpu and GFD suffixes the product "-SHARED",
    # which is also what keeps this pod off exclusive nodes advertising the same resource name.
    return GPU, labels, f"{_product(ctx)}-SHARED"


# --- DRA -------------------------------------------------------------------------------------------------------


def cel_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def device_selectors(ctx: RenderContext) -> list[dict]:
    """CEL selectors of the claim's request: product, MIG profile, driver floor."""
    request = ctx.request
    product_name = ctx.cluster.pool.dra_product_name or request.dra_product_name
    expressions = [f"{ATTR}.productName == {cel_string(product_name)}"]
    if request.strategy == "mig":
        expressions.append(f"{ATTR}.profile == {cel_string(request.mig_profile)}")
    if request.driver_min_major:
        # Guarded: an attribute missing on some device would abort the whole allocation (reference §4.4).
        expressions.append(
            f"'driverVersion' in {ATTR} && {ATTR}.driverVersion.major() >= {int(request.driver_min_major)}"
        )
    if request.driver_branch:
        expressions.append(
            f"'driverVersion' in {ATTR} && {ATTR}.driverVersion.major() == {int(request.driver_branch)}"
        )
    return [{"cel": {"expression": expression}} for expression in expressions]


def build_device_request(ctx: RenderContext) -> dict:
    device_class = MIG_DEVICE_CLASS if ctx.request.strategy == "mig" else GPU_DEVICE_CLASS
    return {
        "name": CLAIM_NAME,
        "exactly": {
            "deviceClassName": device_class,
            "allocationMode": "ExactCount",
            "count": int(ctx.request.gpus_per_replica),
            "selectors": device_selectors(ctx),
        },
    }


# The NVIDIA DRA driver's feature gates (dra-driver-nvidia-gpu v0.4.1 pkg/featuregates/featuregates.go); a cluster
# declares the ones its Helm `featureGates` turn on.
DRA_DRIVER_FEATURE_GATES = (
    "TimeSlicingSettings", "MPSSupport", "IMEXDaemonsWithDNSNames", "PassthroughSupport", "NVMLDeviceHealthCheck",
    "DynamicMIG", "ComputeDomainCliques", "CrashOnNVLinkFabricErrors", "DeviceMetadata",
)  # fmt: skip
TIME_SLICING_GATE = "TimeSlicingSettings"  # alpha, off by default



def _gpu_config(sharing: dict) -> dict:
    return {
        "requests": [CLAIM_NAME],
        "opaque": {
            "driver": DRA_DRIVER,
            "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": sharing},
        },
    }


def kueue_managed(ctx: RenderContext) -> bool:
    """Kueue admits only workloads carrying its queue-name label, which the renderer puts on every GPU workload of a
    Kueue cluster, gang or not (gang.py, `kueue_wiring`)."""
    return ctx.cluster.gang_scheduler == KUEUE


def wants_time_slicing_config(ctx: RenderContext) -> bool:
    """Only where the driver accepts it, and not on workloads Kueue admits: its DRA integration does not support
    per-request `config` (kueue v0.19.2 site/content/en/docs/concepts/dynamic_resource_allocation.md, "Limitations")."""
    return (
        ctx.request.strategy == TIME_SLICING
        and TIME_SLICING_GATE in ctx.cluster.dra_feature_gates
        and not kueue_managed(ctx)
    )


def wants_mps_config(ctx: RenderContext) -> bool:
    """MPS settings only where the driver runs its MPSSupport gate, and not on workloads Kueue admits (no `config`)."""
    return ctx.request.strategy == MPS and ctx.cluster.dra_mps_support and not kueue_managed(ctx)


def build_time_slicing_config() -> dict:
    """The NVIDIA DRA driver's opaque sharing config (needs its TimeSlicingSettings feature gate)."""
    return _gpu_config({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}})


def build_mps_config(ctx: RenderContext) -> dict:
    """MPS through the NVIDIA DRA driver (its MPSSupport gate): an MPS server for the pod's own processes on the
    devices its claim holds, with no cap. The claim is the pod's alone and holds its devices exclusively: the
    v0.4.1 driver publishes no `allowMultipleAllocations` (`cmd/gpu-kubelet-plugin/deviceinfo.go`), so no other
    pod's claim can share them, and a cap of 1/replicas would leave the rest of a GPU the team pays for idle. An
    empty `mpsConfig` sets no limit; it must be there, `MpsConfig.Validate` reads it (dra-driver-nvidia-gpu v0.4.1
    `api/nvidia.com/resource/v1beta1/sharing.go`, `validate.go`)."""
    return _gpu_config({"strategy": "MPS", "mpsConfig": {}})


def build_claim_spec(ctx: RenderContext) -> dict:
    devices = {"requests": [build_device_request(ctx)]}
    if wants_time_slicing_config(ctx):
        devices["config"] = [build_time_slicing_config()]
    elif wants_mps_config(ctx):
        devices["config"] = [build_mps_config(ctx)]
    return {"devices": devices}


def build_resource_claim_template(ctx: RenderContext, name: str) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": ctx.metadata(name),
        # Claims generated from the template carry the request's labels too, so the selector finds them.
        "spec": {"metadata": {"labels": dict(ctx.labels)}, "spec": build_claim_spec(ctx)},
    }


# KEP-5004 DRAExtendedResource: alpha (off) in 1.34/1.35, beta and on by default in 1.36, GA in 1.37.
EXTENDED_RESOURCE_MINOR = 36


def _dra_extended_resource(ctx: RenderContext, resource: str) -> GpuPlacement:
    """Devices asked for as an extended resource: the scheduler makes the pod's claim from the DeviceClass that
    declares `extendedResourceName` (its selectors alone pick the devices, hence no driver floor on this path, and
    the pool's node selector pins the GPU model)."""
    cluster = ctx.cluster
    if ctx.minor < EXTENDED_RESOURCE_MINOR:
        raise RenderError(
            f"Cluster {cluster.name} runs Kubernetes 1.{ctx.minor}, where DRAExtendedResource is alpha and off: "
            f"{resource} would not be served from DRA devices. Re-run placement (the request then gets a claim)."
        )
    if resource not in cluster.dra_extended_resources:
        raise RenderError(
            f"No DeviceClass on {cluster.name} declares extendedResourceName {resource} (last sync); re-run placement."
        )
    scheduler_owns = cluster.gang_scheduler_owns_gpu_nodes or ctx.request.gang is not None
    if scheduler_owns and (refusal := gangapi.dra_extended_resource_refusal(cluster.gang_scheduler)):
        raise RenderError(f"{refusal}. Re-run placement: on {cluster.name} DRA requests get claims.")
    if ctx.request.strategy in REPLICATED:
        raise RenderError(
            f"A {ctx.request.strategy.replace('_', '-')} request keeps its claim: the claim the scheduler makes for "
            f"{resource} carries no sharing config. Re-run placement."
        )
    return GpuPlacement(
        limits={resource: str(int(ctx.request.gpus_per_replica))},
        node_selector=dict(cluster.pool.node_selector),
        gpu_resource=resource,
    )


def _dra(ctx: RenderContext) -> GpuPlacement:
    if ctx.request.dra_extended_resource:
        return _dra_extended_resource(ctx, ctx.request.dra_extended_resource)
    pool = ctx.cluster.pool
    name = child_name(ctx.base, "gpu")
    return GpuPlacement(
        node_selector=dict(pool.node_selector),
        pod_claims=[{"name": CLAIM_NAME, "resourceClaimTemplateName": name}],
        container_claims=[{"name": CLAIM_NAME}],
        objects=[build_resource_claim_template(ctx, name)],
    )

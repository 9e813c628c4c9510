"""Reading a node: one Node object (and the DRA devices its ResourceSlices publish) -> `NodeFacts`, the facts the
portal uses (the reading rules are in the package docstring)."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu.catalogue import Catalogue, GpuModelSpec, base_product, sanitise_product
from gpu.vocabulary import MODE_FOR_GFD_SHARING_STRATEGY, REPLICATED

from ..contract import DEFAULT_POOL_LABEL
from .resources import (
    BOTH,
    DEVICE_PLUGIN,
    DRA,
    DRA_DRIVER,
    DRA_GPU,
    DRA_MIG_PREFIX,
    EXCLUSIVE,
    GPU,
    GPU_SHARED,
    MIG,
    MIG_PREFIX,
    NVIDIA,
    TIME_SLICING,
    profile_for_suffix,
    quantity,
)

_MIG_COUNT_LABEL = re.compile(r"^nvidia\.com/mig-(?P<profile>.+)\.count$")
_MIG_PRODUCT = re.compile(r"-MIG-(?P<profile>\d+g\.\d+gb.*)$")


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: dict[str, str]
    allocatable: dict[str, str]
    capacity: dict[str, str]
    taints: tuple[dict, ...]
    unschedulable: bool
    is_gpu_node: bool
    gpu_product: str = ""
    gpu_model: str | None = None  # catalogue key
    gpu_sku: str = ""  # what tells this SKU from the model's first one (e.g. "NVL"); "" for the first SKU
    gpu_count: int = 0
    gpu_memory_mib: int | None = None
    sharing_mode: str = ""
    mig_capable: bool = False
    mig_strategy: str = ""
    mig_config: str = ""
    mig_config_state: str = ""
    mig_devices: dict[str, int] = field(default_factory=dict)  # profile -> devices on the node
    gpu_replicas: int | None = None
    sharing_strategy: str = ""
    time_slicing_renamed: bool | None = None  # replicas (time-slicing or MPS) advertised as nvidia.com/gpu.shared
    driver_version: str = ""
    driver_major: int | None = None
    clique: str = ""
    device_plugin_config: str = ""
    portal_pool: str = ""
    scheduling_model: str = ""
    dra_devices: tuple[dict, ...] = ()
    gpu_resources: dict[str, int] = field(default_factory=dict)  # allocatable GPU resource keys -> count

    @property
    def schedulable(self) -> bool:
        return not self.unschedulable


def _attr(device: Mapping[str, Any], name: str) -> Any:
    """A DRA device attribute's value, whether the driver wrote it bare or qualified with its domain."""
    attributes = device.get("attributes") or {}
    value = attributes.get(name, attributes.get(f"{DRA_DRIVER}/{name}"))
    if isinstance(value, Mapping):
        for kind in ("string", "version", "int", "bool"):
            if kind in value:
                return value[kind]
    return value


def dra_devices_by_node(slices: Iterable[Mapping[str, Any]]) -> dict[str, list[dict]]:
    """The NVIDIA GPU driver's devices per node, from the newest generation of each ResourceSlice pool."""
    newest: dict[str, int] = {}
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") == DRA_DRIVER:
            pool = spec.get("pool") or {}
            newest[pool.get("name", "")] = max(newest.get(pool.get("name", ""), 0), int(pool.get("generation") or 0))
    found: dict[str, list[dict]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        pool = spec.get("pool") or {}
        if spec.get("driver") != DRA_DRIVER or not spec.get("nodeName"):
            continue
        if int(pool.get("generation") or 0) != newest.get(pool.get("name", ""), 0):
            continue  # an older generation the driver is replacing
        for device in spec.get("devices") or []:
            found.setdefault(spec["nodeName"], []).append(
                {
                    "name": device.get("name", ""),
                    "pool": pool.get("name", ""),
                    "type": _attr(device, "type") or "",
                    "product_name": _attr(device, "productName") or "",
                    "driver_version": _attr(device, "driverVersion") or "",
                    "profile": _attr(device, "profile") or "",
                    "parent_uuid": _attr(device, "parentUUID") or "",
                    "uuid": _attr(device, "uuid") or "",
                }
            )
    return found


def _model_for(catalogue: Catalogue, product: str, dra_names: Iterable[str]) -> GpuModelSpec | None:
    if product:
        model = catalogue.model_by_product(product)
        if model:
            return model
    for name in dra_names:
        model = catalogue.model_by_dra_product_name(name)
        if model:
            return model
    return None


def _driver(labels: Mapping[str, str], dra: Sequence[dict]) -> tuple[str, int | None]:
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if not full and labels.get("nvidia.com/cuda.driver-version.major"):
        parts = [labels.get(f"nvidia.com/cuda.driver-version.{p}") for p in ("major", "minor", "revision")]
        full = ".".join(p for p in parts if p)
    if not full:
        full = next((d["driver_version"] for d in dra if d.get("driver_version")), "")
    major = quantity(str(full).split(".")[0]) if full else None
    return str(full), major


def parse_node(node: Mapping[str, Any], *, catalogue: Catalogue, dra_devices: Sequence[dict] = (),
               pool_label: str = DEFAULT_POOL_LABEL) -> NodeFacts:
    """One Node object (and its DRA devices) -> the facts the portal uses."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    labels = {k: str(v) for k, v in (meta.get("labels") or {}).items()}
    allocatable = {k: str(v) for k, v in (status.get("allocatable") or {}).items()}
    capacity = {k: str(v) for k, v in (status.get("capacity") or {}).items()}
    taints = tuple(
        {k: t[k] for k in ("key", "value", "effect") if t.get(k) not in (None, "")} for t in spec.get("taints") or []
    )
    gpu_devices = [d for d in dra_devices if d["type"] in ("gpu", "mig")]
    extended = {k: n for k, v in allocatable.items() if k.startswith(NVIDIA) and (n := quantity(v))}
    product = labels.get("nvidia.com/gpu.product", "")
    is_gpu = bool(extended or gpu_devices or product or labels.get("nvidia.com/gpu.present") == "true")
    base = dict(
        name=meta.get("name", ""), labels=labels, allocatable=allocatable, capacity=capacity, taints=taints,
        unschedulable=bool(spec.get("unschedulable")), is_gpu_node=is_gpu,
    )
    if not is_gpu:
        return NodeFacts(**base)

    model = _model_for(catalogue, product, [d["product_name"] for d in gpu_devices])
    mig_strategy = labels.get("nvidia.com/mig.strategy", "")
    mig_config = labels.get("nvidia.com/mig.config", "")
    replicas = quantity(labels.get("nvidia.com/gpu.replicas"))
    sharing_strategy = labels.get("nvidia.com/gpu.sharing-strategy", "")

    # MIG devices actually advertised, most direct source first.
    mig_devices: dict[str, int] = {}
    for key, count in extended.items():
        if key.startswith(MIG_PREFIX):
            suffix = key[len(MIG_PREFIX):]
            if suffix.endswith(".shared"):
                suffix = suffix[: -len(".shared")]
            profile = profile_for_suffix(model, suffix)
            mig_devices[profile] = mig_devices.get(profile, 0) + count
    single = _MIG_PRODUCT.search(product) if product and not product.endswith("-MIG-INVALID") else None
    if not mig_devices and single and mig_strategy == "single":
        mig_devices[single["profile"].removesuffix("-SHARED")] = extended.get(GPU, 0)
    if not mig_devices:
        for key, value in labels.items():
            match = _MIG_COUNT_LABEL.match(key)
            if match and (count := quantity(value)):
                mig_devices[match["profile"]] = count
    dra_mig = Counter(d["profile"] for d in gpu_devices if d["type"] == "mig" and d["profile"])
    if not mig_devices and dra_mig:
        mig_devices = dict(dra_mig)

    # Physical GPUs.
    gpu_count = quantity(labels.get("nvidia.com/gpu.count")) or 0
    layout = catalogue.layout_profiles(mig_config, model.key) if model and mig_config else {}
    if mig_strategy == "single" and mig_devices and layout:
        per_gpu = sum(layout.values()) or 1
        gpu_count = max(1, sum(mig_devices.values()) // per_gpu)
    if not gpu_count and gpu_devices:
        gpu_count = sum(1 for d in gpu_devices if d["type"] == "gpu") + len(
            {d["parent_uuid"] for d in gpu_devices if d["type"] == "mig" and d["parent_uuid"]}
        )
    if not gpu_count and extended.get(GPU) and not mig_devices:
        gpu_count = extended[GPU] // (replicas or 1) if replicas and replicas > 1 else extended[GPU]
    if not gpu_count and extended.get(GPU_SHARED):
        gpu_count = extended[GPU_SHARED] // (replicas or 1)

    if mig_devices or layout:
        mode = MIG
    elif sharing_strategy in MODE_FOR_GFD_SHARING_STRATEGY:
        mode = MODE_FOR_GFD_SHARING_STRATEGY[sharing_strategy]
    elif (replicas or 0) > 1 or GPU_SHARED in extended:
        mode = TIME_SLICING
    else:
        mode = EXCLUSIVE

    scheduling = BOTH if (extended and gpu_devices) else DRA if gpu_devices else DEVICE_PLUGIN
    resources = dict(extended)
    for device in gpu_devices:
        key = DRA_GPU if device["type"] == "gpu" else f"{DRA_MIG_PREFIX}{device['profile']}"
        resources[key] = resources.get(key, 0) + 1
    driver_version, driver_major = _driver(labels, gpu_devices)
    dra_name = next((d["product_name"] for d in gpu_devices if d["product_name"]), "")
    sku = base_product(product) if product else sanitise_product(dra_name)
    if model is None or sku == model.product:
        sku = ""
    elif sku.startswith(f"{model.product}-"):
        sku = sku[len(model.product) + 1:]
    else:
        sku = sku.removeprefix("NVIDIA-")
    renamed = (GPU_SHARED in extended) if mode in REPLICATED and extended else None
    return NodeFacts(
        **base,
        gpu_product=product or dra_name,
        gpu_model=model.key if model else None,
        gpu_sku=sku,
        gpu_count=gpu_count,
        gpu_memory_mib=quantity(labels.get("nvidia.com/gpu.memory")),
        sharing_mode=mode,
        mig_capable=labels.get("nvidia.com/mig.capable") == "true" or bool(mig_devices),
        mig_strategy=mig_strategy,
        mig_config=mig_config,
        mig_config_state=labels.get("nvidia.com/mig.config.state", ""),
        mig_devices=dict(sorted(mig_devices.items())),
        gpu_replicas=replicas,
        sharing_strategy=sharing_strategy,
        time_slicing_renamed=renamed,
        driver_version=driver_version,
        driver_major=driver_major,
        clique=labels.get("nvidia.com/gpu.clique", ""),
        device_plugin_config=labels.get("nvidia.com/device-plugin.config", ""),
        portal_pool=labels.get(pool_label, ""),
        scheduling_model=scheduling,
        dra_devices=tuple(gpu_devices),
        gpu_resources=dict(sorted(resources.items())),
    )

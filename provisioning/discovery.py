"""Inventory discovery as pure functions: what the cluster's objects say, turned into node facts, pools and the
differences from what the platform team declared. No Django, no network: `inventory.inventory_sync` reads the
cluster and writes the rows; everything between is here and tested without either.

Reading a node (reference §1-§4, §10):
- GPU model from `nvidia.com/gpu.product` (GFD; `-SHARED` / `-MIG-<profile>` suffixes ignored) or the DRA devices'
  `productName`, matched against every SKU of every catalogue model (an H200 NVL is an H200-141GB); physical GPU count from `nvidia.com/gpu.count` (under MIG `single` it counts slices, so it is
  derived from the layout there);
- sharing mode: `mig` when MIG devices are advertised (allocatable `nvidia.com/mig-<profile>`, a `-MIG-<profile>`
  product under `single`, GFD `nvidia.com/mig-<profile>.count` labels, DRA devices of type `mig`) or the node's
  `nvidia.com/mig.config` names a layout that creates devices; `mps` when `nvidia.com/gpu.sharing-strategy` is
  `mps` (GFD, k8s-device-plugin v0.20.0 `api/config/v1/sharing.go`); `time_slicing` when it is `time-slicing`,
  `nvidia.com/gpu.replicas` > 1 or `nvidia.com/gpu.shared` is advertised; else `exclusive`;
- scheduling model: `device_plugin` when NVIDIA extended resources are allocatable, `dra` when a `gpu.nvidia.com`
  ResourceSlice names the node, `both` (a conflict) when both are true;
- driver from `nvidia.com/cuda.driver-version.full` (else `.major/.minor/.revision`, else the DRA devices'
  `driverVersion`), NVLink domain from `nvidia.com/gpu.clique`.

Grouping rule (docs/inventory.md, "Inventory discovery"): a node belongs to the declared pool whose `node_selector` its
labels satisfy (a declared pool without a selector takes the nodes labelled `<label-domain>/pool=<its name>`; when
several match, the most specific selector wins, then the name, and the overlap is flagged). Other GPU nodes form
discovered pools: by the portal's pool label when present, else by (GPU model, sharing mode with MIG layout or
time-slicing / MPS replicas, scheduling model). Nodes whose GPU the catalogue does not know are not pooled (flagged).
"""
from __future__ import annotations

from portal.text import plural

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gpu.catalogue import Catalogue, GpuModelSpec, base_product, sanitise_product
from gpu.vocabulary import MODE_FOR_GFD_SHARING_STRATEGY, MPS, REPLICATED
from gpu.vocabulary import STRATEGY_FOR_SHARING_MODE as STRATEGY_OF_MODE

NVIDIA = "nvidia.com/"
GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
MIG_PREFIX = "nvidia.com/mig-"
DRA_DRIVER = "gpu.nvidia.com"
DRA_GPU = "gpu.nvidia.com/gpu"  # resource keys for DRA devices, beside the extended-resource names
DRA_MIG_PREFIX = "gpu.nvidia.com/mig-"
DRIVER_MAJOR_LABEL = "nvidia.com/cuda.driver-version.major"
_MIG_COUNT_LABEL = re.compile(r"^nvidia\.com/mig-(?P<profile>.+)\.count$")
_MIG_PRODUCT = re.compile(r"-MIG-(?P<profile>\d+g\.\d+gb.*)$")
_QUANTITY = re.compile(r"^(?P<number>\d+)$")

EXCLUSIVE, MIG, TIME_SLICING = "exclusive", "mig", "time_slicing"
DEVICE_PLUGIN, DRA, BOTH = "device_plugin", "dra", "both"


# --- node facts -------------------------------------------------------------------------------------------------


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


def _int(value: Any) -> int | None:
    """An integer quantity ("8") or label value; None for anything else (GPU resources are always whole)."""
    if value is None:
        return None
    match = _QUANTITY.match(str(value).strip())
    return int(match["number"]) if match else None


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


def _profile_for_suffix(model: GpuModelSpec | None, suffix: str) -> str:
    """`nvidia.com/mig-1g.10gb.me` -> `1g.10gb+me`: the device plugin writes '+' as '.' in resource names."""
    if model and model.mig:
        for profile in model.mig.profiles.values():
            if profile.resource_suffix == suffix:
                return profile.name
    return suffix


def _driver(labels: Mapping[str, str], dra: Sequence[dict]) -> tuple[str, int | None]:
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if not full and labels.get("nvidia.com/cuda.driver-version.major"):
        parts = [labels.get(f"nvidia.com/cuda.driver-version.{p}") for p in ("major", "minor", "revision")]
        full = ".".join(p for p in parts if p)
    if not full:
        full = next((d["driver_version"] for d in dra if d.get("driver_version")), "")
    major = _int(str(full).split(".")[0]) if full else None
    return str(full), major


def parse_node(node: Mapping[str, Any], *, catalogue: Catalogue, dra_devices: Sequence[dict] = (),
               pool_label: str = "gpu-portal.io/pool") -> NodeFacts:
    """One Node object (and its DRA devices) -> the facts the portal uses."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    labels = {k: str(v) for k, v in (meta.get("labels") or {}).items()}
    allocatable = {k: str(v) for k, v in (status.get("allocatable") or {}).items()}
    capacity = {k: str(v) for k, v in (status.get("capacity") or {}).items()}
    taints = tuple(
        {k: t[k] for k in ("key", "value", "effect") if t.get(k) not in (None, "")} for t in spec.get("taints") or []
    )
    gpu_devices = [d for d in dra_devices if d["type"] in ("gpu", "mig")]
    extended = {k: n for k, v in allocatable.items() if k.startswith(NVIDIA) and (n := _int(v))}
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
    replicas = _int(labels.get("nvidia.com/gpu.replicas"))
    sharing_strategy = labels.get("nvidia.com/gpu.sharing-strategy", "")

    # MIG devices actually advertised, most direct source first.
    mig_devices: dict[str, int] = {}
    for key, count in extended.items():
        if key.startswith(MIG_PREFIX):
            suffix = key[len(MIG_PREFIX):]
            if suffix.endswith(".shared"):
                suffix = suffix[: -len(".shared")]
            profile = _profile_for_suffix(model, suffix)
            mig_devices[profile] = mig_devices.get(profile, 0) + count
    single = _MIG_PRODUCT.search(product) if product and not product.endswith("-MIG-INVALID") else None
    if not mig_devices and single and mig_strategy == "single":
        mig_devices[single["profile"].removesuffix("-SHARED")] = extended.get(GPU, 0)
    if not mig_devices:
        for key, value in labels.items():
            match = _MIG_COUNT_LABEL.match(key)
            if match and (count := _int(value)):
                mig_devices[match["profile"]] = count
    dra_mig = Counter(d["profile"] for d in gpu_devices if d["type"] == "mig" and d["profile"])
    if not mig_devices and dra_mig:
        mig_devices = dict(dra_mig)

    # Physical GPUs.
    gpu_count = _int(labels.get("nvidia.com/gpu.count")) or 0
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
        gpu_memory_mib=_int(labels.get("nvidia.com/gpu.memory")),
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


# --- pods: who holds which GPUs ----------------------------------------------------------------------------------


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
        return {k: n for k, v in merged.items() if k.startswith(NVIDIA) and (n := _int(v))}

    total: Counter = Counter()
    for container in spec.get("containers") or []:
        total.update(of(container))
    for container in spec.get("initContainers") or []:
        for key, count in of(container).items():
            total[key] = max(total[key], count)
    return dict(total)


def parse_pods(pods: Iterable[Mapping[str, Any]], *, claims: Iterable[Mapping[str, Any]] = (),
               dra_device_keys: Mapping[tuple[str, str], tuple[str, str]] | None = None,
               label_domain: str = "gpu-portal.io") -> list[PodUse]:
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
        labels = meta.get("labels") or {}
        request_id = _int(labels.get(f"{label_domain}/request-id"))
        found.append(
            PodUse(
                namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""),
                node=spec.get("nodeName") or node_of_pod_claims.get(meta.get("uid", ""), ""),
                phase=status.get("phase", "Pending"), resources=dict(resources), request_id=request_id,
                team=labels.get(f"{label_domain}/team", ""), started_at=status.get("startTime"),
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


# --- pools: grouping and summaries ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeclaredPool:
    """What the platform team declared, as plain values (mirrors NodePool)."""

    name: str
    gpu_model: str
    node_count: int
    gpus_per_node: int
    sharing_mode: str
    mig_strategy: str = "mixed"
    mig_layout: str = ""
    time_slicing_replicas: int | None = None
    time_slicing_renamed: bool = True
    device_plugin_config: str = ""
    driver_version: str = ""
    nvlink_domain: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    scheduling_model: str = DEVICE_PLUGIN  # effective (the pool's, else the cluster's)


@dataclass(frozen=True)
class DiscoveredGroup:
    key: str  # stable grouping key
    name: str  # pool name (DNS-1123, <= 40 characters)
    gpu_model: str
    sharing_mode: str
    mig_strategy: str
    mig_layout: str
    time_slicing_replicas: int | None
    time_slicing_renamed: bool
    device_plugin_config: str
    scheduling_model: str
    node_selector: dict[str, str]
    taints: tuple[dict, ...]
    nodes: tuple[NodeFacts, ...]


@dataclass(frozen=True)
class Grouping:
    declared: dict[str, list[NodeFacts]]  # declared pool name -> its nodes
    discovered: list[DiscoveredGroup]
    overlaps: dict[str, list[tuple[str, str]]]  # declared pool -> [(node, other pool)]
    unpooled: list[NodeFacts]  # GPU nodes whose model the catalogue does not know


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == str(v) for k, v in selector.items())


def pool_name(*parts: str, max_length: int = 40) -> str:
    """A DNS-1123 pool name from parts; a hash keeps long names distinct when they must be cut."""
    import hashlib

    raw = "-".join(p for p in parts if p)
    name = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", raw.lower())).strip("-") or "gpu"
    if len(name) > max_length:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: max_length - 9].rstrip('-')}-{digest}"
    return name


def _layout_part(facts: NodeFacts) -> str:
    if facts.sharing_mode == MIG:
        return facts.mig_config or "+".join(f"{p}x{n}" for p, n in sorted(facts.mig_devices.items()))
    if facts.sharing_mode == TIME_SLICING:
        return f"ts{facts.gpu_replicas or 0}"
    if facts.sharing_mode == MPS:
        return f"mps{facts.gpu_replicas or 0}"
    return ""


def group_nodes(nodes: Sequence[NodeFacts], declared: Sequence[DeclaredPool], *,
                pool_label: str = "gpu-portal.io/pool") -> Grouping:
    """Assign GPU nodes to declared pools by selector, and group the rest into discovered pools (module doc)."""
    by_declared: dict[str, list[NodeFacts]] = {p.name: [] for p in declared}
    overlaps: dict[str, list[tuple[str, str]]] = {}
    rest: list[NodeFacts] = []
    for facts in nodes:
        if not facts.is_gpu_node:
            continue
        matching = [
            p for p in declared
            if selector_matches(p.node_selector, facts.labels)
            or (not p.node_selector and facts.labels.get(pool_label) == p.name)
        ]  # fmt: skip
        if not matching:
            rest.append(facts)
            continue
        matching.sort(key=lambda p: (-len(p.node_selector), p.name))
        by_declared[matching[0].name].append(facts)
        for other in matching[1:]:
            overlaps.setdefault(matching[0].name, []).append((facts.name, other.name))
            overlaps.setdefault(other.name, []).append((facts.name, matching[0].name))

    taken = {p.name for p in declared}
    groups: dict[str, list[NodeFacts]] = {}
    unpooled = []
    for facts in rest:
        if facts.gpu_model is None:
            unpooled.append(facts)
            continue
        if facts.portal_pool:
            key = f"label:{facts.portal_pool}"
        else:
            model_part = f"{facts.gpu_model}/{facts.gpu_sku}" if facts.gpu_sku else facts.gpu_model
            key = "|".join([model_part, facts.sharing_mode, _layout_part(facts), facts.scheduling_model])
        groups.setdefault(key, []).append(facts)
    discovered = []
    for key, members in sorted(groups.items()):
        first = members[0]
        if key.startswith("label:"):
            name = pool_name(first.portal_pool)
            selector = {pool_label: first.portal_pool}
        else:
            suffix = "dra" if first.scheduling_model == DRA else ""
            mode_part = {EXCLUSIVE: "", MIG: f"mig-{_layout_part(first)}", TIME_SLICING: _layout_part(first),
                         MPS: _layout_part(first)}
            name = pool_name(first.gpu_model, first.gpu_sku, mode_part[first.sharing_mode], suffix)
            selector = {"nvidia.com/gpu.product": first.labels["nvidia.com/gpu.product"]} if (
                first.labels.get("nvidia.com/gpu.product")
            ) else {}
            if first.sharing_mode == MIG and first.mig_config:
                selector["nvidia.com/mig.config"] = first.mig_config
            if first.sharing_mode in REPLICATED and first.device_plugin_config:
                selector["nvidia.com/device-plugin.config"] = first.device_plugin_config
        if name in taken:
            name = pool_name(name, "discovered")
        taken.add(name)
        common_taints = [t for t in first.taints if all(t in m.taints for m in members)]
        replicas = min((m.gpu_replicas or 0 for m in members), default=0) or None
        discovered.append(
            DiscoveredGroup(
                key=key, name=name, gpu_model=_most_common(m.gpu_model for m in members),
                sharing_mode=_most_common(m.sharing_mode for m in members),
                mig_strategy=_most_common(m.mig_strategy for m in members) or "mixed",
                mig_layout=_most_common(m.mig_config for m in members) if first.sharing_mode == MIG else "",
                time_slicing_replicas=replicas if first.sharing_mode in REPLICATED else None,
                time_slicing_renamed=any(m.time_slicing_renamed for m in members),
                device_plugin_config=_most_common(m.device_plugin_config for m in members),
                scheduling_model=DRA if first.scheduling_model == DRA else DEVICE_PLUGIN,
                node_selector=selector, taints=tuple(common_taints), nodes=tuple(members),
            )
        )  # fmt: skip
    return Grouping(declared=by_declared, discovered=discovered, overlaps=overlaps, unpooled=unpooled)


def _most_common(values: Iterable[Any]) -> Any:
    counted = Counter(v for v in values if v not in (None, ""))
    if not counted:
        return ""
    return sorted(counted.items(), key=lambda item: (-item[1], str(item[0])))[0][0]


def as_declared(group: DiscoveredGroup) -> DeclaredPool:
    """A discovered group seen as the pool row the sync writes for it (what rendering will use)."""
    return DeclaredPool(
        name=group.name, gpu_model=group.gpu_model, node_count=len(group.nodes),
        gpus_per_node=max((n.gpu_count for n in group.nodes), default=0) or 1, sharing_mode=group.sharing_mode,
        mig_strategy=group.mig_strategy, mig_layout=group.mig_layout,
        time_slicing_replicas=group.time_slicing_replicas, time_slicing_renamed=group.time_slicing_renamed,
        device_plugin_config=group.device_plugin_config, node_selector=dict(group.node_selector),
        scheduling_model=group.scheduling_model,
    )  # fmt: skip


def usable_for(pool: DeclaredPool, facts: NodeFacts) -> bool:
    """Does this node serve what the pool's objects are rendered for: the sharing mode, the MIG strategy, the
    time-slicing resource name and the scheduling model? (The GPU model is taken from the nodes.)"""
    if facts.gpu_model is None or facts.sharing_mode != pool.sharing_mode:
        return False
    if facts.scheduling_model != pool.scheduling_model:
        return False
    if pool.scheduling_model == DEVICE_PLUGIN:
        if pool.sharing_mode == MIG and (facts.mig_strategy or "mixed") != pool.mig_strategy:
            return False
        if pool.sharing_mode == MIG and pool.mig_strategy == "single" and facts.mig_config != pool.mig_layout:
            return False  # under `single` pods are pinned to the declared layout
        if pool.sharing_mode in REPLICATED and facts.time_slicing_renamed not in (None, pool.time_slicing_renamed):
            return False
    return True


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def summarise_pool(pool: DeclaredPool, nodes: Sequence[NodeFacts], catalogue: Catalogue) -> dict[str, Any]:
    """What the pool's nodes offer, for the decision function and the API (JSON-ready). Capacity figures count only
    the usable nodes (see `usable_for`) of the most common GPU model among them."""
    usable = [n for n in nodes if usable_for(pool, n)]
    model = _most_common(n.gpu_model for n in usable) or None
    usable = [n for n in usable if n.gpu_model == model]
    spec = catalogue.models.get(model) if model else None
    mig_profiles: dict[str, int] = {}  # per GPU: the most any usable node offers per physical GPU
    mig_devices: Counter = Counter()
    for n in usable:
        mig_devices.update(n.mig_devices)
        for profile, count in n.mig_devices.items():
            per_gpu = -(-count // max(n.gpu_count, 1))
            mig_profiles[profile] = max(mig_profiles.get(profile, 0), per_gpu)
    drivers = sorted({n.driver_version for n in usable if n.driver_version}, key=_version_key)
    majors = [n.driver_major for n in usable if n.driver_major]
    cliques = Counter(n.clique for n in usable if n.clique)
    return {
        "node_count": len(nodes),
        "usable_node_count": len(usable),
        "schedulable_node_count": sum(1 for n in usable if n.schedulable),
        "gpu_model": model or "",
        # The SKU the nodes carry (an H200 NVL pool is pinned to NVIDIA-H200-NVL, not to the model's first SKU).
        "gpu_product": _most_common(_product_label(n) for n in usable) or (spec.product if spec else ""),
        "dra_product_name": _most_common(d["product_name"] for n in usable for d in n.dra_devices),
        "gpu_models": sorted({n.gpu_model or n.gpu_product for n in nodes}),
        "gpus_per_node": max((n.gpu_count for n in usable), default=0),
        "gpu_counts": sorted({n.gpu_count for n in nodes}),
        "sharing_modes": sorted({n.sharing_mode for n in nodes}),
        "mig_strategies": sorted({n.mig_strategy for n in nodes if n.mig_strategy}),
        "mig_layouts": sorted({n.mig_config for n in nodes if n.mig_config}),
        "mig_profiles": dict(sorted(mig_profiles.items())),
        "mig_devices": dict(sorted(mig_devices.items())),
        "time_slicing_replicas": min((n.gpu_replicas for n in usable if n.gpu_replicas), default=None),
        "replicas": sorted({n.gpu_replicas for n in nodes if n.gpu_replicas}),
        "device_plugin_configs": sorted({n.device_plugin_config for n in nodes if n.device_plugin_config}),
        "driver_versions": drivers,
        "min_driver_version": drivers[0] if drivers else "",
        "min_driver_major": min(majors) if majors else None,
        "nvlink_domain": _most_common(n.clique for n in usable),
        "cliques": sorted(cliques),
        "scheduling_models": sorted({n.scheduling_model for n in nodes}),
        # Does GFD's driver label exist on every usable node? DRA-only nodes may have no GFD (renderer: affinity.py).
        "driver_major_label": bool(usable) and all(DRIVER_MAJOR_LABEL in n.labels for n in usable),
    }


def _product_label(facts: NodeFacts) -> str:
    """The node's `nvidia.com/gpu.product` without GFD's sharing and MIG suffixes ("" on a node without GFD)."""
    label = facts.labels.get("nvidia.com/gpu.product", "")
    return base_product(label) if label else ""


def _d(field_name: str, declared: Any, discovered: Any, message: str) -> dict[str, Any]:
    return {"field": field_name, "declared": declared, "discovered": discovered, "message": message}


def _nodes_where(nodes: Sequence[NodeFacts], predicate) -> str:
    names = [n.name for n in nodes if predicate(n)]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return shown


def pool_discrepancies(pool: DeclaredPool, nodes: Sequence[NodeFacts], catalogue: Catalogue,
                       overlaps: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """Where the declared pool and its nodes disagree, field by field, in plain words. Declared values are never
    changed; the summary used for placement counts only the nodes that serve the declaration."""
    found = []
    name = pool.name
    if len(nodes) != pool.node_count:
        found.append(_d("node_count", pool.node_count, len(nodes),
                         f"{name} declares {plural(pool.node_count, 'node')}; {len(nodes)} match its node selector."))
    if not nodes:
        return found
    models = sorted({n.gpu_model or f"unknown ({n.gpu_product})" for n in nodes})
    if models != [pool.gpu_model]:
        found.append(_d("gpu_model", pool.gpu_model, models,
                         f"{name} declares {pool.gpu_model}; its nodes have {', '.join(models)}."))
    skus = sorted({p for n in nodes if n.gpu_model == pool.gpu_model and (p := _product_label(n))})
    if len(skus) > 1:
        found.append(_d("gpu_product", None, skus,
                         f"{name}'s nodes carry {len(skus)} SKUs ({', '.join(skus)}); pods are pinned to one "
                         "nvidia.com/gpu.product, so the others get none. Split the pool by SKU."))
    counts = sorted({n.gpu_count for n in nodes})
    if counts != [pool.gpus_per_node]:
        found.append(_d("gpus_per_node", pool.gpus_per_node, counts,
                         f"{name} declares {pool.gpus_per_node} GPUs per node; its nodes have "
                         f"{', '.join(map(str, counts))}."))
    modes = sorted({n.sharing_mode for n in nodes})
    if modes != [pool.sharing_mode]:
        odd = _nodes_where(nodes, lambda n: n.sharing_mode != pool.sharing_mode)
        found.append(_d("sharing_mode", pool.sharing_mode, modes,
                         f"{name} declares {pool.sharing_mode}; the sharing mode on {odd} is "
                         f"{', '.join(m for m in modes if m != pool.sharing_mode)}."))
    if pool.sharing_mode == MIG:
        layouts = sorted({n.mig_config or "(no nvidia.com/mig.config)" for n in nodes})
        if layouts != [pool.mig_layout]:
            odd = _nodes_where(nodes, lambda n: n.mig_config != pool.mig_layout)
            found.append(_d("mig_layout", pool.mig_layout, layouts,
                             f"{name} declares layout {pool.mig_layout}; the layout on {odd} is "
                             f"{', '.join(l for l in layouts if l != pool.mig_layout)}."))
        strategies = sorted({n.mig_strategy or "none" for n in nodes if n.sharing_mode == MIG})
        if pool.scheduling_model == DEVICE_PLUGIN and strategies and strategies != [pool.mig_strategy]:
            found.append(_d("mig_strategy", pool.mig_strategy, strategies,
                             f"{name} declares MIG strategy {pool.mig_strategy}; GFD reports "
                             f"{', '.join(strategies)}."))
        stuck = _nodes_where(nodes, lambda n: n.mig_config_state in ("pending", "failed", "rebooting"))
        if stuck:
            states = sorted({n.mig_config_state for n in nodes if n.mig_config_state in ("pending", "failed", "rebooting")})
            found.append(_d("mig_config_state", "success", states,
                             f"mig-manager reports {', '.join(states)} on {stuck}."))
    if pool.sharing_mode in REPLICATED:
        replicas = sorted({n.gpu_replicas or 1 for n in nodes})
        if replicas != [pool.time_slicing_replicas]:
            found.append(_d("time_slicing_replicas", pool.time_slicing_replicas, replicas,
                             f"{name} declares {pool.time_slicing_replicas} replicas per GPU; GFD reports "
                             f"{', '.join(map(str, replicas))}."))
        renamed = {n.time_slicing_renamed for n in nodes if n.time_slicing_renamed is not None}
        if renamed and renamed != {pool.time_slicing_renamed}:
            found.append(_d("time_slicing_renamed", pool.time_slicing_renamed, sorted(renamed),
                             f"{name} declares replicas advertised as "
                             f"{'nvidia.com/gpu.shared' if pool.time_slicing_renamed else 'nvidia.com/gpu'}; "
                             "the nodes advertise the other name."))
    if pool.device_plugin_config:
        configs = sorted({n.device_plugin_config or "(none)" for n in nodes})
        if configs != [pool.device_plugin_config]:
            found.append(_d("device_plugin_config", pool.device_plugin_config, configs,
                             f"{name} declares nvidia.com/device-plugin.config={pool.device_plugin_config}; nodes "
                             f"have {', '.join(configs)}."))
    drivers = sorted({n.driver_version or "(unknown)" for n in nodes}, key=_version_key)
    if pool.driver_version and drivers != [pool.driver_version]:
        found.append(_d("driver_version", pool.driver_version, drivers,
                         f"{name} declares driver {pool.driver_version}; nodes run {', '.join(drivers)}."))
    cliques = sorted({n.clique or "(none)" for n in nodes})
    if pool.nvlink_domain and cliques != [pool.nvlink_domain]:
        found.append(_d("nvlink_domain", pool.nvlink_domain, cliques,
                         f"{name} declares NVLink domain {pool.nvlink_domain}; nodes report {', '.join(cliques)}."))
    models_seen = sorted({n.scheduling_model for n in nodes})
    if BOTH in models_seen:
        odd = _nodes_where(nodes, lambda n: n.scheduling_model == BOTH)
        found.append(_d("scheduling_model", pool.scheduling_model, models_seen,
                         f"Conflict: on {odd} both the device plugin (extended resources) and the NVIDIA DRA GPU "
                         "plugin (ResourceSlices) manage the GPUs; they must not manage the same node."))
    elif models_seen != [pool.scheduling_model]:
        found.append(_d("scheduling_model", pool.scheduling_model, models_seen,
                         f"{name} is rendered for {pool.scheduling_model}; its nodes use {', '.join(models_seen)}."))
    for node_name, other in overlaps:
        found.append(_d("node_selector", pool.node_selector, other,
                         f"Node {node_name} matches the selectors of {name} and {other}."))
    if nodes and not any(usable_for(pool, n) for n in nodes):
        found.append(_d("placement", "usable", "none",
                         f"None of {name}'s nodes serves what the pool declares; nothing is placed on it until "
                         "the declaration or the nodes change."))
    return found


def _unknown_sku_hint(facts: NodeFacts, catalogue: Catalogue | None) -> str:
    same = catalogue.same_memory_as(facts.gpu_memory_mib) if catalogue else []
    if not same:
        return ""
    return (f" Its GPUs have the memory of {' or '.join(same)} ({facts.gpu_memory_mib} MiB): if it is another SKU of "
            "that model, add its NVML name to the model's skus in gpu/data/gpu-catalogue.yaml.")


def cluster_discrepancies(*, declared_version: str, discovered_version: str, declared_gang: str,
                          installed_gang: Sequence[str], declared_scheduling: str, dra_in_use: bool,
                          unpooled: Sequence[NodeFacts], catalogue: Catalogue | None = None) -> list[dict[str, Any]]:
    found = []
    minor = re.match(r"v?(\d+)\.(\d+)", discovered_version or "")
    seen = f"{minor[1]}.{minor[2]}" if minor else ""
    if seen and seen != declared_version:
        found.append(_d("kubernetes_version", declared_version, discovered_version,
                         f"Declared Kubernetes {declared_version}; the API server runs {discovered_version}. "
                         "Objects are rendered for the declared version."))
    if declared_gang != "none" and declared_gang not in installed_gang:
        found.append(_d("gang_scheduler", declared_gang, list(installed_gang),
                         f"Declared gang scheduler {declared_gang} is not installed (its API is not served); "
                         "gangs rendered for it will be refused."))
    if declared_scheduling == DEVICE_PLUGIN and dra_in_use:
        found.append(_d("scheduling_model", declared_scheduling, DRA,
                         "GPU ResourceSlices exist although the cluster is declared device plugin."))
    for facts in unpooled:
        found.append(_d("gpu_model", None, facts.gpu_product,
                         f"Node {facts.name} has GPUs the catalogue does not know ({facts.gpu_product or 'no product'}"
                         "); it is not placed in any pool." + _unknown_sku_hint(facts, catalogue)))
    return found


# --- capacity by strategy ---------------------------------------------------------------------------------------


def key_strategy(key: str, sharing_mode: str, mig_strategy: str = "") -> str | None:
    """Which sharing strategy a GPU resource key serves on a node of this sharing mode. On a MIG node under the
    `mixed` strategy `nvidia.com/gpu` counts the GPUs left whole; under `single` it counts the slices."""
    if key.startswith(MIG_PREFIX) or key.startswith(DRA_MIG_PREFIX):
        return "mig"
    if key == GPU_SHARED:
        return STRATEGY_OF_MODE[sharing_mode] if sharing_mode in REPLICATED else "time_slicing"
    if key in (GPU, DRA_GPU):
        if sharing_mode == MIG:
            return "mig" if mig_strategy == "single" and key == GPU else "whole_gpu"
        return STRATEGY_OF_MODE.get(sharing_mode, "whole_gpu")
    return None


def key_profile(key: str, model: GpuModelSpec | None) -> str | None:
    if key.startswith(DRA_MIG_PREFIX):
        return key[len(DRA_MIG_PREFIX):]
    if key.startswith(MIG_PREFIX):
        return _profile_for_suffix(model, key[len(MIG_PREFIX):].removesuffix(".shared"))
    return None


def equivalents_per_unit(key: str, *, sharing_mode: str, model: GpuModelSpec | None, replicas: int | None,
                         mig_devices: Mapping[str, int] | None = None, mig_strategy: str = "") -> Fraction:
    """GPU equivalents of one unit of a resource key: a whole GPU 1, a MIG slice its compute fraction, a time-sliced
    share 1/replicas (the same arithmetic as the decision's `gpu_equivalents`)."""
    strategy = key_strategy(key, sharing_mode, mig_strategy)
    if strategy == "mig":
        profile = key_profile(key, model)
        if profile is None and mig_devices:  # MIG `single`: nvidia.com/gpu is the node's one profile
            profile = next(iter(mig_devices))
        spec = model.mig.profiles.get(profile) if model and model.mig and profile else None
        return Fraction(spec.compute_slices, model.mig.total_slices) if spec else Fraction(0)
    if strategy in REPLICATED:
        return Fraction(1, max(replicas or 1, 1))
    return Fraction(1)


@dataclass(frozen=True)
class NodeCapacityRow:
    """Plain values of a stored node, enough for capacity figures (no ORM)."""

    name: str
    gpu_model: str | None
    sharing_mode: str
    gpu_replicas: int | None
    gpu_resources: dict[str, int]
    gpu_used: dict[str, int]
    mig_devices: dict[str, int] = field(default_factory=dict)
    schedulable: bool = True
    mig_strategy: str = ""


def capacity_by_strategy(rows: Iterable[NodeCapacityRow], catalogue: Catalogue) -> dict[str, Any]:
    """Free and used GPUs per strategy: devices (slices and shares counted as such) and GPU equivalents, with MIG
    broken down by profile. Cordoned nodes count as total and used, not free."""
    out: dict[str, Any] = {}
    for row in rows:
        model = catalogue.models.get(row.gpu_model) if row.gpu_model else None
        for key, total in row.gpu_resources.items():
            strategy = key_strategy(key, row.sharing_mode, row.mig_strategy)
            if strategy is None:
                continue
            used = min(row.gpu_used.get(key, 0), total)
            free = total - used if row.schedulable else 0
            each = equivalents_per_unit(key, sharing_mode=row.sharing_mode, model=model, replicas=row.gpu_replicas,
                                        mig_devices=row.mig_devices, mig_strategy=row.mig_strategy)
            bucket = out.setdefault(strategy, {"devices_total": 0, "devices_used": 0, "devices_free": 0,
                                               "equivalents_total": Fraction(0), "equivalents_used": Fraction(0),
                                               "equivalents_free": Fraction(0)})
            for name, value in (("total", total), ("used", used), ("free", free)):
                bucket[f"devices_{name}"] += value
                bucket[f"equivalents_{name}"] += each * value
            if strategy == "mig":
                profile = key_profile(key, model) or next(iter(row.mig_devices), "?")
                per = bucket.setdefault("profiles", {}).setdefault(profile, {"total": 0, "used": 0, "free": 0})
                per["total"] += total
                per["used"] += used
                per["free"] += free
    for bucket in out.values():
        for name in ("total", "used", "free"):
            bucket[f"equivalents_{name}"] = float(round(bucket[f"equivalents_{name}"], 3))
        if "profiles" in bucket:
            bucket["profiles"] = dict(sorted(bucket["profiles"].items()))
    return dict(sorted(out.items()))


__all__ = [
    "NodeFacts", "PodUse", "DeclaredPool", "DiscoveredGroup", "Grouping", "NodeCapacityRow", "parse_node",
    "parse_pods", "dra_devices_by_node", "dra_device_keys", "device_classes", "group_nodes", "as_declared", "usable_for",
    "summarise_pool", "pool_discrepancies", "cluster_discrepancies", "capacity_by_strategy", "key_strategy",
    "key_profile", "equivalents_per_unit", "pool_name", "selector_matches",
]

"""The GPU catalogue: models, MIG profiles and named MIG layouts, read from the data files shipped in
`gpu/data/` (sources in SOURCES.md there). Pure Python, no Django: the decision function, the
renderer, the planner and metering all read the same objects.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path

import yaml

DATA_DIR = Path(__file__).resolve().parent / "data"
PROFILE_RE = re.compile(r"^(?:\d+c\.)?(?P<slices>\d+)g\.(?P<memory>\d+)gb(?P<attrs>[+-].*)?$")
_PRODUCT_SUFFIX = re.compile(r"-(SHARED|MIG-.*)$")


def sanitise_product(nvml_name: str) -> str:
    """An NVML device name as GFD writes it into `nvidia.com/gpu.product`: characters outside [A-Za-z0-9-_. ]
    dropped, then runs of whitespace joined with '-' (k8s-device-plugin v0.20.0 `internal/lm/resource.go`,
    `sanitise`)."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", nvml_name).split())


def base_product(product: str) -> str:
    """A GFD product label without the suffixes GFD adds: `-SHARED` (unrenamed sharing) and `-MIG-<profile>`
    (MIG `single`, possibly followed by `-SHARED`)."""
    return _PRODUCT_SUFFIX.sub("", re.sub(r"-SHARED$", "", product))


@dataclass(frozen=True)
class MigProfileSpec:
    name: str  # as NVIDIA writes it, e.g. "1g.18gb" or "1g.18gb+me"
    compute_slices: int
    memory_gb: int
    max_instances: int

    @property
    def has_attributes(self) -> bool:
        return "+" in self.name or self.name.count("-") > 0

    @property
    def resource_suffix(self) -> str:
        # '+' is illegal in resource names; the device plugin rewrites "+me" to ".me".
        return self.name.replace("+", ".")

    @property
    def resource_name(self) -> str:
        return f"nvidia.com/mig-{self.resource_suffix}"


@dataclass(frozen=True)
class MigSpec:
    total_slices: int
    min_driver: str
    profiles: dict[str, MigProfileSpec]

    def smallest_profile_covering(self, memory_gb: float, offered: set[str] | None = None) -> MigProfileSpec | None:
        """The plain (no media-extension) profile with the least memory, then fewest slices, that holds
        `memory_gb`; restricted to `offered` names when given."""
        candidates = [
            p
            for p in self.profiles.values()
            if not p.has_attributes and p.memory_gb >= memory_gb and (offered is None or p.name in offered)
        ]
        return min(candidates, key=lambda p: (p.memory_gb, p.compute_slices, p.name), default=None)


@dataclass(frozen=True)
class GpuModelSpec:
    key: str
    product: str
    dra_product_name: str
    family: str
    memory_gb: int
    memory_mib: int
    pci_device_ids: tuple[str, ...]
    mig: MigSpec | None = None
    skus: tuple[str, ...] = ()  # NVML names of every card sold as this model, the primary first
    # NVLink reaches GPUs of other nodes (GB200/GB300 NVL72 racks): multi-node jobs need a ComputeDomain.
    multinode_nvlink: bool = False

    @property
    def mig_capable(self) -> bool:
        return self.mig is not None

    @property
    def products(self) -> tuple[str, ...]:
        """The `nvidia.com/gpu.product` values of its SKUs."""
        return tuple(sanitise_product(name) for name in self.skus)


@dataclass(frozen=True)
class Catalogue:
    models: dict[str, GpuModelSpec]
    layouts: dict[str, list[dict]] = field(repr=False)

    def model(self, key: str) -> GpuModelSpec:
        return self.models[key]

    def model_by_product(self, product: str) -> GpuModelSpec | None:
        """Match a GFD product label against every SKU of every model, ignoring the -SHARED and -MIG-<profile>
        suffixes GFD may add."""
        base = base_product(product)
        return next((m for m in self.models.values() if base in m.products), None)

    def model_by_dra_product_name(self, name: str) -> GpuModelSpec | None:
        """Match the NVIDIA DRA driver's `productName` attribute (the raw NVML name) against every SKU."""
        return next((m for m in self.models.values() if name in m.skus), None)

    def same_memory_as(self, memory_mib: int | None) -> list[str]:
        """Models whose GPUs have this much memory: what an unknown SKU probably is."""
        return sorted(m.key for m in self.models.values() if memory_mib and m.memory_mib == memory_mib)

    def profile(self, model_key: str, profile_name: str) -> MigProfileSpec | None:
        model = self.models.get(model_key)
        if model is None or model.mig is None:
            return None
        return model.mig.profiles.get(profile_name)

    def layout_profiles(self, layout: str, model_key: str) -> dict[str, int]:
        """What a named mig-parted layout creates on one GPU of this model: profile name -> count.
        Empty when the layout does not apply to the model (or disables MIG)."""
        model = self.models[model_key]
        for entry in self.layouts.get(layout, []):
            device_filter = entry.get("device-filter")
            if isinstance(device_filter, str):
                device_filter = [device_filter]
            if device_filter and not set(f.upper() for f in device_filter) & {d.upper() for d in model.pci_device_ids}:
                continue
            if not entry.get("mig-enabled"):
                return {}
            devices = entry.get("mig-devices") or {}
            if model.mig is None or any(name not in model.mig.profiles for name in devices):
                return {}
            return dict(devices)
        return {}

    def layouts_for(self, model_key: str) -> list[str]:
        """Named layouts that create at least one MIG device on this model."""
        return sorted(name for name in self.layouts if self.layout_profiles(name, model_key))


def parse_profile(name: str, max_instances: int) -> MigProfileSpec:
    match = PROFILE_RE.match(name)
    if not match:
        raise ValueError(f"not a MIG profile name: {name!r}")
    return MigProfileSpec(
        name=name,
        compute_slices=int(match["slices"]),
        memory_gb=int(match["memory"]),
        max_instances=max_instances,
    )


def mig_equivalents(profile: MigProfileSpec, mig: MigSpec, *, policy: str = "compute") -> Fraction:
    """GPU equivalents of one MIG device: compute slices / the GPU's slices, or memory fraction."""
    if policy == "memory":
        total_memory = max(p.memory_gb for p in mig.profiles.values())
        return Fraction(profile.memory_gb, total_memory)
    return Fraction(profile.compute_slices, mig.total_slices)


@cache
def load_catalogue(data_dir: Path = DATA_DIR) -> Catalogue:
    raw = yaml.safe_load((data_dir / "gpu-catalogue.yaml").read_text())
    layouts = yaml.safe_load((data_dir / "mig-parted-default-config.yaml").read_text())["mig-configs"]
    models = {}
    for item in raw["models"]:
        mig = None
        if item.get("mig"):
            mig = MigSpec(
                total_slices=item["mig"]["total_slices"],
                min_driver=item["mig"]["min_driver"],
                profiles={n: parse_profile(n, c) for n, c in item["mig"]["profiles"].items()},
            )
        models[item["key"]] = GpuModelSpec(
            key=item["key"],
            product=item["product"],
            dra_product_name=item["dra_product_name"],
            family=item["family"],
            memory_gb=item["memory_gb"],
            memory_mib=item["memory_mib"],
            pci_device_ids=tuple(item["pci_device_ids"]),
            mig=mig,
            skus=tuple(item.get("skus") or [item["dra_product_name"]]),
            multinode_nvlink=bool(item.get("multinode_nvlink", False)),
        )
        spec = models[item["key"]]
        if (spec.skus[0], spec.products[0]) != (spec.dra_product_name, spec.product):
            raise ValueError(f"{spec.key}: product and dra_product_name must be the first SKU's two forms")
    return Catalogue(models=models, layouts=layouts)

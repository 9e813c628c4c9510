"""Capacity by strategy: which strategy each GPU resource key serves, what one unit of it is worth in GPU
equivalents, and the free and used figures over stored nodes."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gpu.catalogue import Catalogue, GpuModelSpec
from gpu.equivalents import gpu_equivalents
from gpu.vocabulary import REPLICATED, WHOLE_GPU
from gpu.vocabulary import STRATEGY_FOR_SHARING_MODE as STRATEGY_OF_MODE

from .resources import DRA_GPU, DRA_MIG_PREFIX, GPU, GPU_SHARED, MIG, MIG_PREFIX, profile_for_suffix


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
        return profile_for_suffix(model, key[len(MIG_PREFIX):].removesuffix(".shared"))
    return None


def equivalents_per_unit(key: str, *, sharing_mode: str, model: GpuModelSpec | None, replicas: int | None,
                         mig_devices: Mapping[str, int] | None = None, mig_strategy: str = "") -> Fraction:
    """GPU equivalents of one unit of a resource key: a whole GPU 1, a MIG slice its compute fraction, a time-sliced
    share 1/replicas (the same arithmetic as the decision's `gpu_equivalents`)."""
    strategy = key_strategy(key, sharing_mode, mig_strategy)
    if strategy == MIG:
        profile = key_profile(key, model)
        if profile is None and mig_devices:  # MIG `single`: nvidia.com/gpu is the node's one profile
            profile = next(iter(mig_devices))
        spec = model.mig.profiles.get(profile) if model and model.mig and profile else None
        return gpu_equivalents(MIG, 1, mig=model.mig if model else None, profile=spec) or Fraction(0)
    if strategy in REPLICATED:
        return gpu_equivalents(strategy, 1, replicas=max(replicas or 1, 1))
    return gpu_equivalents(WHOLE_GPU, 1)


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

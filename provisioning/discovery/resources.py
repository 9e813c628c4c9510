"""The names discovery reads: NVIDIA's resource keys and labels, the sharing and scheduling modes it tells apart, and
how a resource key or a label value is read. Pure; the other discovery modules share these."""
from __future__ import annotations

import re
from typing import Any

from gpu.catalogue import GpuModelSpec
from gpu.vocabulary import BOTH, DEVICE_PLUGIN, DRA, EXCLUSIVE, MIG, TIME_SLICING

NVIDIA = "nvidia.com/"
GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
MIG_PREFIX = "nvidia.com/mig-"
DRA_DRIVER = "gpu.nvidia.com"
DRA_GPU = "gpu.nvidia.com/gpu"  # resource keys for DRA devices, beside the extended-resource names
DRA_MIG_PREFIX = "gpu.nvidia.com/mig-"
DRIVER_MAJOR_LABEL = "nvidia.com/cuda.driver-version.major"
_QUANTITY = re.compile(r"^(?P<number>\d+)$")



def quantity(value: Any) -> int | None:
    """An integer quantity ("8") or label value; None for anything else (GPU resources are always whole)."""
    if value is None:
        return None
    match = _QUANTITY.match(str(value).strip())
    return int(match["number"]) if match else None


def profile_for_suffix(model: GpuModelSpec | None, suffix: str) -> str:
    """`nvidia.com/mig-1g.10gb.me` -> `1g.10gb+me`: the device plugin writes '+' as '.' in resource names."""
    if model and model.mig:
        for profile in model.mig.profiles.values():
            if profile.resource_suffix == suffix:
                return profile.name
    return suffix

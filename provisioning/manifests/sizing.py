"""CPU and host memory each replica requests beside its GPUs (the request carries only GPU facts).

Defaults per GPU device (whole GPU, MIG slice or time-sliced share), scaled by devices per replica:

| strategy      | CPU cores | memory | why |
|---------------|-----------|--------|-----|
| whole_gpu     | 8         | 64 Gi  | a data loader and host staging buffers per GPU; fits 8-GPU nodes with 112+ cores, 1 TiB+ RAM |
| mig           | 2         | 16 Gi  | a slice is 1/7 to 1/2 of a GPU; keep the host share proportionate so 7 slices fit a GPU's share |
| time_slicing  | 2         | 16 Gi  | shares are for notebooks and light inference |

Memory is requested and limited at the same value (a replica that outgrows it is OOM-killed rather than
starving its neighbours); CPU has no limit (throttling GPU feeders wastes GPU time). Half the memory may be
used as /dev/shm, which PyTorch data loaders and NCCL need beyond the 64 MiB container default.
"""
from __future__ import annotations

from dataclasses import dataclass

from .spec import RequestSpec

CPU_PER_DEVICE = {"whole_gpu": 8, "mig": 2, "time_slicing": 2}
MEMORY_GI_PER_DEVICE = {"whole_gpu": 64, "mig": 16, "time_slicing": 16}


@dataclass(frozen=True)
class HostResources:
    cpu: int  # cores
    memory_gi: int

    @property
    def shm_gi(self) -> int:
        return max(1, self.memory_gi // 2)


def host_resources(request: RequestSpec) -> HostResources:
    devices = int(request.gpus_per_replica)
    return HostResources(
        cpu=CPU_PER_DEVICE[request.strategy] * devices,
        memory_gi=MEMORY_GI_PER_DEVICE[request.strategy] * devices,
    )

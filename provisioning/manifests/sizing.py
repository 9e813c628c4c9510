"""CPU and host memory each replica requests beside its GPUs (the request carries only GPU facts).

The unit is a whole GPU's host share, 8 cores and 64 GiB (an 8-GPU node has 112+ cores and 1 TiB+ of RAM,
so eight such shares leave room for the system and the operators). Other devices get a fraction of it:

| strategy      | per device                              | why |
|---------------|-----------------------------------------|-----|
| whole_gpu     | 8 cores, 64 Gi                          | a data loader and host staging buffers per GPU |
| mig           | 1 core, 8 Gi per compute slice (1g..7g) | a 7g slice is a whole GPU; a 1g slice a seventh (rounded up) |
| time_slicing  | 2 cores, 16 Gi                          | a quarter: pools typically advertise 4 replicas per GPU |
| mps           | 2 cores, 16 Gi                          | as time-slicing: a share of one GPU |

Multiplied by the devices per replica. Memory is requested and limited at the same value (a replica that
outgrows it is OOM-killed rather than starving its neighbours); CPU has no limit (throttling the processes
that feed a GPU wastes GPU time). Half the memory may be used as /dev/shm, which PyTorch data loaders and
NCCL need beyond the 64 MiB container default; MPS pods get none of their own, their /dev/shm is the MPS
daemon's (workloads.mps_daemon_shm).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu.catalogue import PROFILE_RE
from gpu.vocabulary import REPLICATED

from .spec import RequestSpec

WHOLE_GPU_CPU, WHOLE_GPU_MEMORY_GI = 8, 64
PER_COMPUTE_SLICE_CPU, PER_COMPUTE_SLICE_MEMORY_GI = 1, 8
TIME_SLICE_CPU, TIME_SLICE_MEMORY_GI = 2, 16


@dataclass(frozen=True)
class HostResources:
    cpu: int  # cores
    memory_gi: int

    @property
    def shm_gi(self) -> int:
        return max(1, self.memory_gi // 2)


def _compute_slices(profile: str | None) -> int:
    match = PROFILE_RE.match(profile or "")
    return int(match["slices"]) if match else 1


def host_resources(request: RequestSpec) -> HostResources:
    devices = int(request.gpus_per_replica)
    if request.strategy == "mig":
        slices = _compute_slices(request.mig_profile)
        cpu, memory = PER_COMPUTE_SLICE_CPU * slices, PER_COMPUTE_SLICE_MEMORY_GI * slices
    elif request.strategy in REPLICATED:
        cpu, memory = TIME_SLICE_CPU, TIME_SLICE_MEMORY_GI
    else:
        cpu, memory = WHOLE_GPU_CPU, WHOLE_GPU_MEMORY_GI
    return HostResources(cpu=cpu * devices, memory_gi=memory * devices)

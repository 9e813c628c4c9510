"""How the simulated cluster behaves: durations and the scenario switches (docs/simulated-cluster.md)."""
from __future__ import annotations

from dataclasses import dataclass

# The GPU Operator's mig-manager takes 30-60 s per GPU to apply a layout (drain of its clients, MIG mode, the
# instances, restarting the device plugin and GFD); the simulator takes the middle, times `time_scale`.
MIG_SECONDS_PER_GPU = 45.0


@dataclass(frozen=True)
class Scenario:
    start_seconds: float = 5.0  # a bound pod's image pull and container start: Pending -> Running
    run_seconds: float = 120.0  # a Job's pod Running -> Succeeded (Deployments' pods run until deleted)
    # Job (or JobSet) name prefix -> its pods' run time instead of run_seconds, e.g. a long training run.
    run_seconds_by_name: tuple[tuple[str, float], ...] = ()
    # The stalled-gang switch: in a gang (a Job of several pods) whose name starts with one of these, the last rank
    # is never bound and carries PodScheduled=False, reason Unschedulable, as when its node's GPUs are taken.
    stall_gangs: tuple[str, ...] = ()
    mig_seconds_per_gpu: float = MIG_SECONDS_PER_GPU
    time_scale: float = 1.0  # scales the MIG reconfiguration delay (the demo runs it at 1/20)

    def run_seconds_for(self, owner_name: str) -> float:
        for prefix, seconds in self.run_seconds_by_name:
            if owner_name.startswith(prefix):
                return seconds
        return self.run_seconds

    def stalls(self, owner_name: str) -> bool:
        return any(owner_name.startswith(prefix) for prefix in self.stall_gangs)

    def mig_delay(self, gpus: int) -> float:
        return self.mig_seconds_per_gpu * gpus * self.time_scale

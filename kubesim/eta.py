"""The start-estimate scenario on the simulated cluster: requests that wait on the Kueue quota and on fragmentation,
then start when the running work ahead of them finishes. The portal's own code does everything on the portal's
side (submission, approval, apply, its admission check, status reconciliation, inventory sync and the wait
readings of provisioning.wait_refresh), over HTTPS against the fake API server; this module only plays the clock and the
people. `bench/eta.py` prints the figures; tests/provisioning/test_wait_eta_simulated.py asserts them.

The cluster is the simulated one (kubesim.cluster: six 8-GPU H100 nodes in `h100-train`) registered as a Kueue
cluster, with the platform's ClusterQueue `gpu-portal` holding `QUOTA_GPUS` nvidia.com/gpu. The work, in the order
it is submitted (each one's simulated run time differs from its `expected_hours` on purpose, so the error is not
zero by construction):

- `eta-gang` 4 x 8 GPUs (a gang), `eta-short` 1 x 6 and `eta-medium` 1 x 6 (single pods, queued through Kueue
  too, like every GPU workload on a Kueue cluster: docs/gang-scheduling.md): running first, on four whole nodes and
  6 of the 8 GPUs of the other two;
- `eta-wide` 1 x 8: no node has 8 free GPUs (fragmentation) until `eta-short` ends;
- `eta-next` 2 x 8, a gang: Kueue has no unused quota for it (WaitingForQuota) until `eta-gang` ends.

Time is simulated: a step moves the clock by `step_seconds`, ticks the cluster once and runs the portal's reads
once, so the figures do not depend on the machine's load.
"""
from __future__ import annotations

import datetime
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesim import cluster as sim_cluster
from kubesim import kueue
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario

# Kueue queues every GPU workload: the first three hold 44 and eta-wide 8, which leaves nothing for eta-next's 16.
QUOTA_GPUS = 52
TEAM_QUOTA = 80  # the portal's whole-GPU quota of the team: approval lets all five through
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "image": "nvcr.io/nvidia/pytorch:25.01-py3", "command": ["torchrun", "train.py"]}


@dataclass(frozen=True)
class Work:
    name: str
    gpus_per_replica: int
    replicas: int
    expected_hours: float
    run_minutes: float  # how long its pods actually run on the simulated cluster
    waits: str = ""  # what it is expected to wait on: "", "capacity" (fragmentation) or "quota"


FIRST = (
    Work("eta-gang", 8, 4, 0.25, 12),  # 3 minutes shorter than expected
    Work("eta-short", 6, 1, 0.1, 8),  # 2 minutes longer than expected
    Work("eta-medium", 6, 1, 0.5, 40),
)
THEN = (
    Work("eta-wide", 8, 1, 0.5, 30, waits="capacity"),
    Work("eta-next", 8, 2, 0.5, 30, waits="quota"),
)


@dataclass
class Outcome:
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per request that waited
    steps: int = 0

    @property
    def errors_minutes(self) -> list[float]:
        return [r["error_minutes"] for r in self.rows if r["error_minutes"] is not None]

    def summary(self) -> dict[str, Any]:
        errors = sorted(abs(e) for e in self.errors_minutes)
        return {"waits": len(self.rows), "started": len(errors),
                "median_abs_error_minutes": round(statistics.median(errors), 1) if errors else None,
                "p90_abs_error_minutes": errors[math.ceil(0.9 * len(errors)) - 1] if errors else None}


class Clock:
    """Simulated seconds since the epoch, shared by the cluster and the portal's reads."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def moment(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.now, datetime.UTC)


def scenario_for(works=FIRST + THEN) -> Scenario:
    """The simulated cluster's behaviour: each Work's run time by its Job name (`<name>-r<id>`)."""
    return Scenario(start_seconds=5, run_seconds_by_name=tuple((f"{w.name}-r", w.run_minutes * 60) for w in works))


def seed(fake, quota_gpus: int = QUOTA_GPUS) -> None:
    """The simulated nodes, and what the platform made for Kueue: the ClusterQueue with its GPU quota."""
    sim_cluster.seed(fake)
    fake.put({"apiVersion": kueue.KUEUE, "kind": "ClusterQueue", "metadata": {"name": "gpu-portal"},
              "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                       "flavors": [{"name": "h100-80gb", "resources": [{"name": "nvidia.com/gpu",
                                                                        "nominalQuota": quota_gpus}]}]}]}})


def run(fake, *, cluster_name: str, team, engineer, platform_user, clock: Clock, step_seconds: float = 30,
        max_steps: int = 240, progress: Callable[[str], None] | None = None) -> Outcome:
    """Play the scenario on a fake already seeded (`seed`) and registered as `cluster_name` (a Kueue cluster).
    Approvals dispatch the apply after commit: run this where on_commit callbacks run (autocommit, or a
    transactional test) and Celery runs tasks eagerly."""
    from intake.models import GpuRequest
    from workflows.services import request_approve, request_submit
    from provisioning.admission import admission_checks_sync
    from provisioning.inventory import team_quota_set
    from provisioning.inventory_sync import inventory_sync
    from provisioning.models import Cluster, RequestWait
    from provisioning.reconcile import cluster_status_reconcile
    from provisioning.wait_refresh import refresh_candidates, request_wait_refresh

    cluster = Cluster.objects.get(name=cluster_name)
    team_quota_set(team=team, strategy="whole_gpu", gpu_equivalents=TEAM_QUOTA)
    simulation = Simulation(fake, scenario_for(), clock)
    outcome = Outcome()
    say = progress or (lambda line: None)

    def submit(works) -> dict[int, Work]:
        made = {}
        for work in works:
            answers = {**TRAINING, "gpus_per_replica": work.gpus_per_replica, "replicas": work.replicas,
                       "expected_hours": work.expected_hours}
            gpu_request = request_submit(user=engineer, team=team, name=work.name, raw_answers=answers)
            request_approve(user=platform_user, request_id=gpu_request.pk, comment="ETA scenario.")
            made[gpu_request.pk] = work
            say(f"{clock.moment():%H:%M:%S} submitted and approved #{gpu_request.pk} {work.name}")
        return made

    def step() -> None:
        clock.now += step_seconds
        simulation.tick()
        admission_checks_sync(cluster_id=cluster.pk)
        cluster_status_reconcile(cluster_id=cluster.pk, watch_seconds=0, clock=clock.moment)
        inventory_sync(cluster=cluster)
        for request_id in refresh_candidates():
            request_wait_refresh(request_id=request_id, now=clock.moment())
        outcome.steps += 1

    seen: dict[int, RequestWait] = {}  # the reading that gave each request its first estimate

    def until_running(works: dict[int, Work]) -> None:
        while outcome.steps < max_steps and GpuRequest.objects.filter(pk__in=works).exclude(status="running").exists():
            step()
            for record in RequestWait.objects.filter(request_id__in=works, first_estimated_at__isnull=False):
                if record.request_id not in seen and record.first_estimated_at == record.checked_at:
                    seen[record.request_id] = record
            if progress:
                readings = {r.request_id: r for r in RequestWait.objects.filter(request_id__in=works)}
                say(f"{clock.moment():%H:%M:%S} " + "; ".join(
                    f"{work.name} {GpuRequest.objects.get(pk=pk).status}"
                    + (f" [{', '.join(b['reason'] for b in readings[pk].blockers)}] est "
                       f"{readings[pk].estimated_start}" if pk in readings else "")
                    for pk, work in works.items()))

    until_running(submit(FIRST))
    waiting = submit(THEN)
    until_running(waiting)
    for request_id, work in waiting.items():
        record = RequestWait.objects.filter(request_id=request_id).first()
        reading = seen.get(request_id)
        outcome.rows.append({
            "request": f"#{request_id} {work.name}", "status": GpuRequest.objects.get(pk=request_id).status,
            "expected_wait": work.waits,
            "blockers": sorted({b["kind"] for b in reading.blockers}) if reading else [],
            "reasons": [b["reason"] for b in reading.blockers] if reading else [],
            "unblock": reading.unblock if reading else [],
            "basis": reading.estimate_basis if reading else "",
            "first_estimate": record.first_estimate if record else None,
            "actual_start": record.actual_start if record else None,
            "error_minutes": round(record.error_seconds / 60, 1) if record and record.error_seconds is not None
            else None,
        })
    return outcome

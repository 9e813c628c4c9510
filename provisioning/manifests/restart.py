"""What happens when one rank of a multi-pod training job fails: the whole gang restarts, or the whole Job fails.

A torch.distributed gang cannot lose one rank: the others block in their next collective until NCCL times out,
holding their GPUs. Kubernetes batch/v1 has no "restart every index" action (PodFailurePolicyAction is FailJob,
FailIndex, Ignore or Count: kubernetes/api batch/v1/types.go, master 10b39a39 = 1.37-dev; backoffLimitPerIndex
restarts one index). So:

- JobSet installed (cluster setting): the Indexed Job becomes the one replicated Job of a
  `jobset.x-k8s.io/v1alpha2` JobSet whose `failurePolicy` (kubernetes-sigs/jobset v0.12.0
  `api/jobset/v1alpha2/jobset_types.go`: no matching rule = RestartJobSet) recreates every child Job, i.e. every
  rank, up to `maxRestarts` times. The child Job has `backoffLimit: 0` so the first failed rank fails it.
- Otherwise: a `podFailurePolicy` rule `FailJob` on any non-zero exit of the main container ends the whole Job
  (the Job controller terminates the other ranks) instead of recreating the one rank while the rest wait.

In both, a pod disrupted by preemption or a drain (condition DisruptionTarget) is ignored: it is recreated without
counting as a failure.
"""

from __future__ import annotations

from .context import RenderContext

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
REPLICATED_JOB = "workers"
GANG_MAX_RESTARTS = 3
MAIN_CONTAINER = "main"  # workloads.CONTAINER_NAME

IGNORE_DISRUPTION = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}


def whole_gang_fails(container: str = MAIN_CONTAINER) -> dict:
    """The podFailurePolicy of a gang's Job: a crashed rank fails the Job (all ranks), a disruption does not."""
    return {
        "rules": [
            IGNORE_DISRUPTION,
            {"action": "FailJob", "onExitCodes": {"containerName": container, "operator": "NotIn", "values": [0]}},
        ]
    }


def child_job_name(jobset_name: str) -> str:
    """The name JobSet gives its only child Job: <jobset>-<replicatedJob>-<index> (jobset v0.12.0
    `pkg/util/names`/`GenJobName`: fmt "%s-%s-%d")."""
    return f"{jobset_name}-{REPLICATED_JOB}-0"


def build_jobset(ctx: RenderContext, name: str, job: dict) -> dict:
    """Wrap a rendered Job (its metadata and spec) as the single replicated Job of a JobSet.

    Queue labels, suspend and the KAI owner annotation move to the JobSet: Kueue and KAI act on the top owner.
    """
    job_meta, job_spec = job["metadata"], dict(job["spec"])
    metadata = {key: value for key, value in job_meta.items() if key != "labels"}
    metadata["labels"] = dict(job_meta["labels"])
    suspend = job_spec.pop("suspend", None)
    job_spec["backoffLimit"] = 0  # the first failed rank fails the child Job; the JobSet restarts all of them
    spec = {
        "failurePolicy": {"maxRestarts": GANG_MAX_RESTARTS, "restartStrategy": "Recreate"},
        # Our headless Service gives ranks their DNS names (pod subdomain); JobSet need not create another.
        "network": {"enableDNSHostnames": False},
        "replicatedJobs": [
            {
                "name": REPLICATED_JOB,
                "replicas": 1,
                "template": {"metadata": {"labels": dict(ctx.labels)}, "spec": job_spec},
            }
        ],
    }
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": JOBSET_API_VERSION, "kind": "JobSet", "metadata": metadata, "spec": spec}

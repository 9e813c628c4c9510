"""A failed rank takes the whole gang with it: JobSet restarts every rank, a plain Job fails all of them.

Given a gang-scheduled training request, when it is rendered for a cluster with JobSet, then the Indexed Job is the
single replicated Job of a JobSet whose failurePolicy restarts the whole set (queue marks and the gang's owner on
the JobSet); without JobSet, the Job's podFailurePolicy fails the whole Job on a crashed rank. Both are valid
against the schemas of the cluster's version and the JobSet CRD.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from provisioning.manifests import render, validate_objects

from .matrix import cases

CASES = {case.id: case for case in cases()}


def _render(case_id, **cluster_changes):
    case = CASES[case_id]
    return render(case.request, replace(case.cluster, **cluster_changes))


def _one(objects, kind):
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def test_without_jobset_a_crashed_rank_fails_the_whole_job():
    job = _one(_render("whole_gpu-device_plugin-volcano-1.36-training_gang-plain"), "Job")
    rules = job["spec"]["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    assert rules[1] == {"action": "FailJob",
                        "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [0]}}


def test_a_single_pod_training_keeps_its_own_retries():
    job = _one(_render("whole_gpu-device_plugin-volcano-1.36-training_single-plain", jobset=True), "Job")
    assert [r["action"] for r in job["spec"]["podFailurePolicy"]["rules"]] == ["Ignore"]


@pytest.mark.parametrize("backend, version", [("volcano", "1.35"), ("kai", "1.36"), ("kueue", "1.37"),
                                              ("native", "1.36")])
def test_with_jobset_the_whole_gang_restarts(backend, version):
    case_id = f"whole_gpu-device_plugin-{backend}-{version}-training_gang-plain"
    objects = _render(case_id, jobset=True)

    assert "Job" not in [o["kind"] for o in objects]
    jobset = _one(objects, "JobSet")
    name = jobset["metadata"]["name"]
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 3, "restartStrategy": "Recreate"}
    (replicated,) = jobset["spec"]["replicatedJobs"]
    job_spec = replicated["template"]["spec"]
    assert (replicated["replicas"], job_spec["backoffLimit"], job_spec["completionMode"]) == (1, 0, "Indexed")
    env = {e["name"]: e.get("value") for e in job_spec["template"]["spec"]["containers"][0]["env"]}
    # Rank 0 is pod 0 of the child Job <jobset>-workers-0 (JobSet names it so).
    assert env["MASTER_ADDR"].startswith(f"{name}-workers-0-0.")
    for owned in [o for o in objects if o["kind"] in ("PodGroup", "Workload")]:
        owner = owned["metadata"]["annotations"]["gpu-portal.example.com/owner"]
        assert owner == f"jobset.x-k8s.io/v1alpha2 JobSet {name}"
    if backend == "kueue":
        assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] and jobset["spec"]["suspend"] is True
        assert "kueue.x-k8s.io/queue-name" not in replicated["template"]["metadata"]["labels"]
    if backend == "kai":
        assert jobset["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"] == "true"
    if backend == "native":
        workload = _one(objects, "Workload")
        assert workload["spec"]["controllerRef"] == {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": name}
    assert validate_objects(objects, version) == len(objects)

"""A worker killed (SIGKILL) in the middle of applying.

Given an approved request whose apply is inside a (slow) write to the Kubernetes API, when the worker's whole
process group is killed with SIGKILL (no warm shutdown, no acknowledgement, no requeue by the worker itself) and a
new worker is started, then the unacknowledged message is redelivered once its visibility timeout passes, the apply
runs again idempotently, and the request ends `provisioning` with one succeeded job (both attempts counted), one
set of objects in the cluster and one event per transition.
"""
from __future__ import annotations

import time

import pytest

from .checks import (
    approve, cluster_events, jobs, objects_in_cluster, one_set_of_objects, request_status, submit, transitions,
    wait_for_job, writes_to,
)
from .harness import wait_until

pytestmark = pytest.mark.fault


def test_a_worker_killed_mid_apply_is_redelivered_and_applied_once(stack, fault_kube):
    request_id = submit(stack, "sigkill")
    deployment = f"/deployments/sigkill-r{request_id}"
    # Held for less than the client's timeout (PORTAL_KUBE_TIMEOUT_SECONDS=2): the worker is inside apply, waiting.
    fault_kube.delay_next("PATCH", deployment + "$", 1.5)
    seen = len(fault_kube.requests)
    killed = stack.worker

    approve(stack, request_id)
    wait_until(lambda: writes_to(fault_kube, deployment, since=seen), timeout=30,
               message="the worker to be writing the Deployment")
    [job] = jobs(stack, request_id)
    assert (job.status, job.attempts) == ("running", 1)
    killed_at = time.monotonic()
    stack.kill_worker()
    assert not killed.alive
    stack.start_worker()

    job = wait_for_job(stack, request_id, "succeeded", "failed", timeout=60)
    redelivered_after = time.monotonic() - killed_at

    assert (job.status, job.attempts) == ("succeeded", 2), job.message
    assert request_status(stack, request_id) == "provisioning"
    assert one_set_of_objects(fault_kube, request_id, "sigkill"), objects_in_cluster(fault_kube, request_id)
    assert len(writes_to(fault_kube, deployment, since=seen)) == 2  # the interrupted write, and the re-apply
    assert transitions(stack, request_id) == [
        ("", "pending_approval"), ("pending_approval", "approved"), ("approved", "provisioning")]
    assert len(cluster_events(stack, request_id, "Applied")) == 1
    assert redelivered_after < 30

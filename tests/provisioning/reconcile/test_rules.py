"""The pure status rules: pods (realistic dicts of rendered workloads) -> facts -> status, plain words, gang state.
No database, no cluster: `now` is given."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from provisioning.reconcile import RequestContext, Thresholds, assess, duration_words, facts_by_request, pod_fact
from tests.provisioning.reconcile import pods as k8s

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DOMAIN = "gpu-portal.io"
THRESHOLDS = Thresholds(stall_after=timedelta(minutes=15), release_after=timedelta(hours=2),
                        image_pull_fail_after=timedelta(minutes=10), no_pods_fail_after=timedelta(hours=1))


def minutes(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


def facts(pods):
    return facts_by_request(pods, label_domain=DOMAIN).get(1, [])


def context(status="provisioning", workload_class="training", replicas=4, gang=4, **extra) -> RequestContext:
    return RequestContext(request_id=1, status=status, workload_class=workload_class, replicas=replicas,
                          gang_min_members=gang, status_changed_at=extra.pop("changed", T0), **extra)


@pytest.fixture
def job():
    return k8s.rendered_workload("training_gang")


@pytest.fixture
def gang(job):
    """Four pods of a 4-replica training gang, created at T0, each asking for 2 whole GPUs."""
    return [k8s.pod_for(job, index=i, created=T0) for i in range(4)]


def run(pods, ctx, now, thresholds=THRESHOLDS):
    return assess(facts(pods), ctx, thresholds, now)


# --- facts ------------------------------------------------------------------------------------------------------


def test_a_pending_pod_carries_the_schedulers_reason_and_message(gang):
    pod = k8s.moved(gang[3], k8s.unschedulable(gang[3], minutes(0)))
    fact = pod_fact(pod, request_id=1, label_domain=DOMAIN)
    assert (fact.phase, fact.scheduled, fact.unschedulable_reason) == ("Pending", False, "Unschedulable")
    assert fact.unschedulable_message.startswith("0/12 nodes are available: 4 Insufficient nvidia.com/gpu")
    assert (fact.completion_index, fact.gpu_equivalents, fact.created_at) == (3, Decimal("2.000000"), T0)


def test_a_running_pod_says_where_and_since_when(gang):
    fact = pod_fact(k8s.moved(gang[0], k8s.running(gang[0], "gpu-h100-03", minutes(2))), request_id=1,
                    label_domain=DOMAIN)
    assert (fact.phase, fact.scheduled, fact.node, fact.ready) == ("Running", True, "gpu-h100-03", True)
    assert fact.running_since == minutes(2) and fact.containers[0].state == "running"


def test_pods_of_other_owners_or_without_a_request_label_are_left_out(gang):
    stranger = k8s.moved(gang[0], {"status": {"phase": "Running"}})
    stranger["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "helm"
    unlabelled = k8s.moved(gang[1], {"status": {"phase": "Running"}})
    del unlabelled["metadata"]["labels"]["gpu-portal.io/request-id"]
    assert facts_by_request([stranger, unlabelled, gang[2]], label_domain=DOMAIN) == {
        1: [pod_fact(gang[2], request_id=1, label_domain=DOMAIN)]
    }


# --- plain words ------------------------------------------------------------------------------------------------


def texts(assessment):
    return [(e.reason, e.text) for e in assessment.events]


def test_events_say_what_happened_in_plain_words(gang):
    pods = [
        k8s.moved(gang[0], k8s.running(gang[0], "gpu-h100-03", minutes(1))),
        k8s.moved(gang[1], k8s.oom_killed_then_running(gang[1], "gpu-h100-04", minutes(1), minutes(5), restarts=2)),
        k8s.moved(gang[2], k8s.image_pull_backoff(gang[2], "gpu-h100-05", minutes(1))),
        k8s.moved(gang[3], k8s.unschedulable(gang[3], minutes(0))),
    ]
    found = texts(run(pods, context(), minutes(6)))
    name = [p["metadata"]["name"] for p in pods]
    assert ("Scheduled", f"Pod {name[0]} (rank 0) scheduled on gpu-h100-03.") in found
    assert ("Started", f"Pod {name[0]} started on gpu-h100-03.") in found
    assert ("OOMKilled", f"Pod {name[1]}: container main was killed because it ran out of memory (OOMKilled); "
                         "restarts: 2.") in found
    assert ("ImagePullBackOff", f"Pod {name[2]}: container main cannot pull its image "
            'nvcr.io/nvidia/pytorch:25.01-py3 (ImagePullBackOff): Back-off pulling image '
            '"nvcr.io/nvidia/pytorch:25.01-py3": ErrImagePull: failed to pull and unpack image '
            '"nvcr.io/nvidia/pytorch:25.01-py3": failed to resolve reference "nvcr.io/nvidia/pytorch:25.01-py3": '
            'nvcr.io/nvidia/pytorch:25.01-py3: not found.') in found
    assert ("Unschedulable", f"Pod {name[3]} is waiting for a node: {k8s.UNSCHEDULABLE_MESSAGE}") in found


def test_evictions_failures_and_completions_have_their_own_words(gang):
    pods = [
        k8s.moved(gang[0], k8s.evicted(gang[0], "gpu-h100-03", minutes(1), minutes(30))),
        k8s.moved(gang[1], k8s.terminated(gang[1], "gpu-h100-04", minutes(1), minutes(40), exit_code=1,
                                          reason="Error", message="CUDA error: an illegal memory access")),
        k8s.moved(gang[2], k8s.terminated(gang[2], "gpu-h100-05", minutes(1), minutes(50))),
    ]
    found = dict((reason, text) for reason, text in texts(run(pods, context(gang=None), minutes(60))))
    assert found["Evicted"].startswith(f"Pod {pods[0]['metadata']['name']} was evicted from node gpu-h100-03: "
                                       "The node was low on resource: memory.")
    assert found["Error"] == (f"Pod {pods[1]['metadata']['name']}: container main exited with code 1 (Error): "
                              "CUDA error: an illegal memory access.")
    assert found["Completed"] == f"Pod {pods[2]['metadata']['name']} completed successfully."


def test_the_same_observation_gives_the_same_keys_and_a_new_crash_a_new_one(gang):
    once = k8s.moved(gang[0], k8s.oom_killed_then_running(gang[0], "n1", minutes(1), minutes(5), restarts=1))
    again = k8s.moved(gang[0], k8s.oom_killed_then_running(gang[0], "n1", minutes(6), minutes(9), restarts=2))
    first = {e.key for e in run([once], context(gang=None, replicas=1), minutes(7)).events}
    assert first == {e.key for e in run([once], context(gang=None, replicas=1), minutes(8)).events}
    second = {e.key for e in run([again], context(gang=None, replicas=1), minutes(10)).events}
    assert len(second - first) == 1 and all(len(key) <= 200 for key in first | second)


# --- status rules: training gangs -------------------------------------------------------------------------------


def test_a_gang_moves_from_provisioning_to_running_to_completed(gang):
    pending = [k8s.moved(p, k8s.unschedulable(p, minutes(0))) for p in gang]
    assert run(pending, context(), minutes(1)).target == "provisioning"

    started = [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(3))) for i, p in enumerate(gang)]
    up = run(started, context(), minutes(4))
    assert (up.target, up.reason) == ("running", "AllRunning") and up.gang.whole
    assert up.comment == "All 4 pods of the gang are running on gpu-h100-00, gpu-h100-01, gpu-h100-02, gpu-h100-03."

    done = [k8s.moved(p, k8s.terminated(p, "n", minutes(3), minutes(90))) for p in gang]
    finished = run(done, context(status="running"), minutes(91))
    assert finished.target == "completed"
    assert finished.comment == "All 4 pods of the training job completed successfully."


def test_three_of_four_running_stall_only_after_the_threshold(gang):
    pods = [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(1))) for i, p in enumerate(gang[:3])]
    pods.append(k8s.moved(gang[3], k8s.unschedulable(gang[3], minutes(0))))

    early = run(pods, context(), minutes(14))
    assert (early.target, early.gang.partial, early.gang.partial_since) == ("provisioning", True, minutes(1))

    stalled = run(pods, context(), minutes(16))
    assert (stalled.target, stalled.reason) == ("stalled", "GangStalled")
    assert (stalled.gang.running_pods, stalled.gang.pending_pods) == (3, 1)
    assert stalled.gang.gpu_equivalents_running == Decimal("6.000000")
    assert stalled.comment.startswith("3 of 4 pods of the gang are running while 1 has been Pending for 15 min "
                                      "(the training threshold is 15 min): pod ")
    assert "is waiting for a node: 0/12 nodes are available: 4 Insufficient nvidia.com/gpu" in stalled.comment
    assert stalled.comment.endswith("The running pods hold 6 GPU-equivalents that cannot do their work until the "
                                    "whole gang runs.")


def test_a_stalled_gang_stays_stalled_until_whole_then_runs(gang):
    partial = [k8s.moved(p, k8s.running(p, "n", minutes(1))) for p in gang[:3]]
    partial.append(k8s.moved(gang[3], k8s.unschedulable(gang[3], minutes(0))))
    ctx = context(status="stalled", stalled_since=minutes(16))
    assert run(partial, ctx, minutes(40)).target == "stalled"
    everything_pending = [k8s.moved(p, k8s.unschedulable(p, minutes(0))) for p in gang]
    assert run(everything_pending, ctx, minutes(40)).target == "stalled"  # nothing burns, still not whole

    whole = partial[:3] + [k8s.moved(gang[3], k8s.running(gang[3], "n", minutes(41)))]
    assert run(whole, ctx, minutes(42)).target == "running"


def test_a_stalled_gang_is_released_after_the_policys_timeout(gang):
    partial = [k8s.moved(p, k8s.running(p, "n", minutes(1))) for p in gang[:3]]
    partial.append(k8s.moved(gang[3], k8s.unschedulable(gang[3], minutes(0))))
    ctx = context(status="stalled", stalled_since=minutes(16))
    assert run(partial, ctx, minutes(16 + 119)).target == "stalled"

    released = run(partial, ctx, minutes(16 + 120))
    assert (released.target, released.reason, released.teardown) == ("failed", "GangReleased", True)
    assert released.comment.startswith("Released after 2 h stalled (the training policy releases a stalled gang "
                                       "after 2 h): only 3 of 4 pods ever ran together.")
    never = Thresholds(THRESHOLDS.stall_after, None, THRESHOLDS.image_pull_fail_after, THRESHOLDS.no_pods_fail_after)
    assert run(partial, ctx, minutes(16 + 10_000), never).target == "stalled"


# --- status rules: failures -------------------------------------------------------------------------------------


def test_training_fails_beyond_the_backoff_limit_but_evictions_do_not_count(job):
    failed = [k8s.pod_for(job, index=0, created=minutes(i), attempt=i) for i in range(4)]
    failed = [k8s.moved(p, k8s.terminated(p, "n", minutes(i), minutes(i + 1), exit_code=137, reason="OOMKilled"))
              for i, p in enumerate(failed)]
    assert run(failed[:3], context(gang=None), minutes(10)).target == "provisioning"  # 3 = the limit: retried
    gave_up = run(failed, context(gang=None), minutes(10))
    assert (gave_up.target, gave_up.reason) == ("failed", "BackoffLimitExceeded")
    assert gave_up.comment == (
        "The training job gave up: 4 pods failed, more than its backoff limit of 3 allows. The last one: pod "
        f"{failed[3]['metadata']['name']}: container main was killed because it ran out of memory (OOMKilled).")

    evictions = [k8s.pod_for(job, index=0, created=minutes(i), attempt=i) for i in range(6)]
    evictions = [k8s.moved(p, k8s.evicted(p, "n", minutes(i), minutes(i + 1))) for i, p in enumerate(evictions)]
    assert run(evictions, context(gang=None), minutes(10)).target == "provisioning"


def test_an_image_that_cannot_be_pulled_fails_the_request_after_the_threshold(gang):
    pods = [k8s.moved(p, k8s.image_pull_backoff(p, "n", minutes(0))) for p in gang]
    assert run(pods, context(), minutes(9)).target == "provisioning"
    failed = run(pods, context(), minutes(10))
    assert (failed.target, failed.reason, failed.teardown) == ("failed", "ImagePullFailed", True)
    assert failed.comment.startswith(f"Pod {pods[0]['metadata']['name']} could not pull image "
                                     "nvcr.io/nvidia/pytorch:25.01-py3 for 10 min (ImagePullBackOff: Back-off pulling")

    hopeless = [k8s.moved(gang[0], k8s.image_pull_backoff(gang[0], "n", minutes(0), reason="InvalidImageName"))]
    assert run(hopeless, context(gang=None, replicas=1), minutes(0.5)).target == "failed"


def test_a_running_service_is_not_failed_for_one_replica_that_cannot_pull():
    deployment = k8s.rendered_workload("inference")
    ready = k8s.pod_for(deployment, index=0, created=T0)
    ready = k8s.moved(ready, k8s.running(ready, "n", minutes(1)))
    stuck = k8s.pod_for(deployment, index=1, created=T0)
    stuck = k8s.moved(stuck, k8s.image_pull_backoff(stuck, "n", minutes(1)))
    ctx = context(workload_class="inference", replicas=2, gang=None)
    assert run([ready, stuck], ctx, minutes(30)).target == "failed"  # never ran: fails
    assert run([ready, stuck], RequestContext(**{**ctx.__dict__, "status": "running"}), minutes(30)).target == "running"


# --- status rules: serving, no pods -----------------------------------------------------------------------------


def test_a_service_runs_when_its_replicas_are_ready():
    deployment = k8s.rendered_workload("inference")
    pods = [k8s.pod_for(deployment, index=i, created=T0) for i in range(2)]
    not_ready = [k8s.moved(p, k8s.running(p, "n", minutes(1), ready=False)) for p in pods]
    ctx = context(workload_class="inference", replicas=2, gang=None)
    assert run(not_ready, ctx, minutes(2)).target == "provisioning"
    ready = [k8s.moved(p, k8s.running(p, "n", minutes(1))) for p in pods]
    assert (run(ready, ctx, minutes(2)).target, run(ready, ctx, minutes(2)).comment) == (
        "running", "2 of 2 replicas are running and ready.")


def test_no_pods_keeps_the_status_until_the_timeout():
    waiting = run([], context(changed=T0), minutes(59))
    assert (waiting.target, waiting.pods_missing_since) == ("provisioning", T0)
    failed = run([], context(changed=T0), minutes(60))
    assert (failed.target, failed.reason) == ("failed", "NoPods")
    assert failed.comment.startswith("No pod of this request appeared on the cluster within 1 h of provisioning")

    gone = run([], context(status="running", changed=T0), minutes(500))
    assert (gone.target, gone.pods_missing_since) == ("running", minutes(500))  # counted from now on
    gone = run([], context(status="running", pods_missing_since=minutes(500)), minutes(560))
    assert gone.target == "failed" and "have been gone from the cluster for 1 h" in gone.comment


@pytest.mark.parametrize("seconds, words", [(12, "12 s"), (900, "15 min"), (7500, "2 h 5 min"), (7200, "2 h"),
                                            (3 * 86400 + 4 * 3600, "3 d 4 h")])
def test_durations_in_words(seconds, words):
    assert duration_words(timedelta(seconds=seconds)) == words

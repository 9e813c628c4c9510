"""Who preempted whom, in plain words (pure): the preemptor of a node is the portal's pod nominated there (else the
highest-priority one placed there), a preempted pod's event names it with both priorities and the grace period,
and a Kueue eviction names the request whose Job preempted it from Kueue's own message."""
from __future__ import annotations

from provisioning.reconcile.facts import pod_fact
from provisioning.reconcile.kueue_words import kueue_preemption_events
from provisioning.reconcile.words import pod_events, preemption_words, preemptors_by_node

DOMAIN = "gpu-portal.io"


def _pod(name: str, request_id: int, *, node: str = "", nominated: str = "", priority: int | None = None,
         priority_class: str = "", preempted: bool = False, grace: int | None = None) -> dict:
    spec = {"nodeName": node} if node else {}
    if priority is not None:
        spec |= {"priority": priority, "priorityClassName": priority_class}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    conditions = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                   "message": "default-scheduler: preempting to accommodate a higher priority pod"}] if preempted else []
    status = {"phase": "Running" if node else "Pending", "conditions": conditions}
    if nominated:
        status["nominatedNodeName"] = nominated
    return {"metadata": {"name": name, "namespace": "gpu-team-a", "uid": f"uid-{name}",
                         "labels": {"app.kubernetes.io/managed-by": "gpu-portal",
                                    f"{DOMAIN}/request-id": str(request_id)}},
            "spec": spec, "status": status}


def _fact(pod: dict):
    return pod_fact(pod, request_id=int(pod["metadata"]["labels"][f"{DOMAIN}/request-id"]), label_domain=DOMAIN)


def test_the_nominated_pod_is_the_preemptor_over_one_already_placed_there():
    victim = _fact(_pod("nb", 1, node="n1", priority=1000, priority_class="development", preempted=True, grace=600))
    placed = _fact(_pod("train", 2, node="n1", priority=5000, priority_class="training"))
    nominated = _fact(_pod("serve", 3, nominated="n1", priority=1_000_000, priority_class="production-inference"))
    preemptors = preemptors_by_node([victim, placed, nominated])
    assert (preemptors["n1"].request_id, preemptors["n1"].name) == (3, "serve")
    [event] = [e for e in pod_events(victim, preemptors["n1"]) if e.reason == "Preempted"]
    assert event.key == "uid-nb:preempted" and event.request_id == 1
    assert event.text.startswith("Pod nb was preempted by the scheduler (PreemptionByScheduler) on node n1: pod serve "
                                 "of request #3 (priority class production-inference, 1000000) needed its GPUs and "
                                 "outranks it (priority class development, 1000).")
    assert "termination grace period of 600 s" in event.text
    # Once the preemptor runs on the node (nominated no more), it is still the one named.
    running = _fact(_pod("serve", 3, node="n1", priority=1_000_000, priority_class="production-inference"))
    assert preemptors_by_node([victim, running])["n1"].request_id == 3


def test_without_a_known_preemptor_the_words_say_so_and_the_default_grace_applies():
    victim = _fact(_pod("nb", 1, node="n1", preempted=True))
    assert "a higher-priority pod needed its GPUs" in preemption_words(victim, None)
    assert "no priority class" in preemption_words(victim, None) and "of 30 s" in preemption_words(victim, None)
    assert "Preempted" not in [e.reason for e in pod_events(_fact(_pod("ok", 1, node="n1")))]


def _workload(name: str, job_uid: str, message: str, *, evicted: bool = True) -> dict:
    conditions = [{"type": "Evicted", "status": "True" if evicted else "False", "reason": "Preempted",
                   "message": message, "lastTransitionTime": "2026-12-01T12:01:00Z"}]
    return {"metadata": {"name": name, "namespace": "gpu-team-a", "uid": f"wl-{name}",
                         "ownerReferences": [{"kind": "Job", "name": name, "uid": job_uid}]},
            "status": {"conditions": conditions}}


def test_a_kueue_eviction_names_the_preempting_request_from_the_job_uid_in_kueues_message():
    message = ("Preempted to accommodate a workload (UID: wl-prod, JobUID: job-prod) due to prioritization in the "
               "ClusterQueue; preemptor path: /gpu-portal; preemptee path: /gpu-portal")
    jobs = {"job-dev": (7, "gpu-team-a/dev"), "job-prod": (9, "gpu-team-a/prod")}
    [event] = kueue_preemption_events([_workload("dev", "job-dev", message),
                                       _workload("other", "job-unknown", message),  # not the portal's
                                       _workload("old", "job-dev", message, evicted=False)], jobs)
    assert (event.request_id, event.reason, event.key) == (7, "Preempted", "wl-dev:kueue-preempted:2026-12-01T12:01:00Z")
    assert "to make room for request #9 (Job gpu-team-a/prod), due to prioritization in the ClusterQueue" in event.text
    [unknown] = kueue_preemption_events([_workload("dev", "job-dev", message.replace("job-prod", "job-x"))], jobs)
    assert "to make room for a higher-priority workload (Job uid job-x)" in unknown.text

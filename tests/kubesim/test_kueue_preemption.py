"""kubesim's Kueue (v0.19.2) preempts within a ClusterQueue by priority: a production Job that does not fit the
queue's quota evicts the admitted development Job (Evicted/Preempted with Kueue's message), whose Job is suspended and
whose pods go; it then gets the quota. A queue that does not preempt (Kueue's default) leaves it waiting. Read back over
HTTPS with the portal's own Kubernetes client."""
from __future__ import annotations

import pytest

from kubesim import cluster, kueue
from kubesim.kubelet import Simulation
from kubesim.nodes import namespace
from kubesim.scenario import Scenario
from tests.kubesim.test_simulation import Clock

NS = "gpu-team-a"
KUEUE = kueue.KUEUE


def _job(name: str, priority_class: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {kueue.QUEUE_LABEL: NS}},
            "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": {
                "restartPolicy": "Never", "priorityClassName": priority_class,
                "nodeSelector": {"gpu-portal.io/pool": "h100-train"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "c", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}


def _setup(fake, kube_client, preemption: dict | None):
    fake.put(namespace(NS))
    cluster.seed(fake)
    spec = {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}
    if preemption:
        spec["preemption"] = preemption
    fake.put({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "team-a"}, "spec": spec})
    fake.put({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": NS, "namespace": NS},
              "spec": {"clusterQueue": "team-a"}})
    classes = kube_client.resource("scheduling.k8s.io/v1", "PriorityClass")
    for name, value in (("development", 1000), ("production", 1_000_000)):
        classes.create(body={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                             "metadata": {"name": name}, "value": value})
    clock = Clock()
    simulation = Simulation(fake, Scenario(start_seconds=5, run_seconds=36_000), clock)
    _, dev = kueue.submit_job(fake, _job("dev", "development"))
    simulation.tick()
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    assert [p["status"]["phase"] for p in fake.find("v1", "Pod", NS, "app=dev")] == ["Running"]
    return simulation, dev


def _conditions(kube_client, workload: dict) -> dict[str, dict]:
    live = kube_client.resource(KUEUE, "Workload").get(name=workload["metadata"]["name"], namespace=NS).to_dict()
    return {c["type"]: c for c in live["status"].get("conditions") or []}


def test_a_higher_priority_workload_preempts_within_its_cluster_queue(fake_kube, kube_client):
    simulation, dev = _setup(fake_kube, kube_client, {"withinClusterQueue": "LowerPriority"})
    prod_job, prod = kueue.submit_job(fake_kube, _job("prod", "production"))
    simulation.tick()

    evicted = _conditions(kube_client, dev)
    why = (f"Preempted to accommodate a workload (UID: {prod['metadata']['uid']}, JobUID: {prod_job['metadata']['uid']}) "
           "due to prioritization in the ClusterQueue; preemptor path: /team-a; preemptee path: /team-a")
    assert (evicted["Evicted"]["status"], evicted["Evicted"]["reason"], evicted["Evicted"]["message"]) == (
        "True", "Preempted", why)
    assert (evicted["Preempted"]["status"], evicted["Preempted"]["reason"]) == ("True", "InClusterQueue")
    assert evicted["QuotaReserved"]["status"] == "False" and evicted["Admitted"]["reason"] == "NoReservation"
    assert fake_kube.get("batch/v1", "Job", "dev", NS)["spec"]["suspend"] is True
    assert fake_kube.find("v1", "Pod", NS, "app=dev") == []
    waiting = _conditions(kube_client, prod)["QuotaReserved"]
    assert (waiting["status"], waiting["reason"]) == ("False", "Pending")
    assert waiting["message"].endswith("Pending the preemption of 1 workload(s)")

    simulation.tick()
    assert _conditions(kube_client, prod)["Admitted"]["status"] == "True"
    assert _conditions(kube_client, dev)["QuotaReserved"]["reason"] == "WaitingForQuota"


def test_a_cluster_queue_that_does_not_preempt_leaves_the_higher_priority_workload_waiting(fake_kube, kube_client):
    simulation, dev = _setup(fake_kube, kube_client, None)  # Kueue's default: withinClusterQueue Never
    _, prod = kueue.submit_job(fake_kube, _job("prod", "production"))
    simulation.tick()
    simulation.tick()
    assert "Evicted" not in _conditions(kube_client, dev)
    assert _conditions(kube_client, prod)["QuotaReserved"]["reason"] == "WaitingForQuota"
    assert [p["status"]["phase"] for p in fake_kube.find("v1", "Pod", NS, "app=dev")] == ["Running"]


def test_the_workload_priority_class_of_the_jobs_label_decides_over_the_pods_class(fake_kube, kube_client):
    simulation, dev = _setup(fake_kube, kube_client, {"withinClusterQueue": "LowerPriority"})
    wpc = kube_client.resource(KUEUE, "WorkloadPriorityClass")
    for name, value in (("batch-low", 10), ("batch-high", 20)):
        wpc.create(body={"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                         "value": value})
    # Its pods' class is lower than the running Job's, but Kueue orders Workloads by the WorkloadPriorityClass.
    fake_kube.patch("batch/v1", "Job", "dev", NS, {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": "batch-low"}}})
    fake_kube.patch(KUEUE, "Workload", dev["metadata"]["name"], NS, {"spec": {
        "priorityClassName": "batch-low", "priority": 10, "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"}})
    job = _job("urgent", "development")
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "batch-high"
    _, urgent = kueue.submit_job(fake_kube, job)
    assert (urgent["spec"]["priorityClassName"], urgent["spec"]["priority"]) == ("batch-high", 20)
    simulation.tick()
    assert _conditions(kube_client, dev)["Evicted"]["reason"] == "Preempted"

"""Preemption on the simulated cluster (kubesim.preemption): PriorityClasses created over HTTPS as a platform team
would, a low-priority pod holding the last free GPUs, and what kube-scheduler v1.35 does when higher-priority work
cannot fit; read back over HTTPS with the portal's own Kubernetes client."""
from __future__ import annotations

import pytest

from kubesim import cluster, nodes
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario
from provisioning.kube.client import KubeClient
from tests.kubesim.test_simulation import Clock

GPU_POOL = "h100-train"


def _pod(name: str, *, gpus: int = 8, priority_class: str = "", grace: int | None = None,
         never: bool = False) -> dict:
    spec = {"restartPolicy": "Always", "nodeSelector": {"gpu-portal.io/pool": GPU_POOL},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if never:
        spec["preemptionPolicy"] = "Never"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a", "labels": {"app": name}}, "spec": spec,
            "status": {"phase": "Pending"}}


def _priority_class(name: str, value: int, *, never: bool = False) -> dict:
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": f"{name} (test)"}
    if never:
        body["preemptionPolicy"] = "Never"
    return body


@pytest.fixture
def sim(fake_kube, kube_connection):
    fake_kube.put(nodes.namespace("team-a"))
    cluster.seed(fake_kube)
    for i in range(5):  # one node of the pool left: its 8 GPUs are the last free ones
        fake_kube.patch("v1", "Node", f"{GPU_POOL}-{i}", None, {"spec": {"unschedulable": True}})
    with KubeClient(kube_connection) as kube:
        classes = kube.resource("scheduling.k8s.io/v1", "PriorityClass")
        for body in (_priority_class("development", 1000), _priority_class("production-inference", 1_000_000),
                     _priority_class("batch-no-preempt", 1_000_000, never=True)):
            classes.create(body=body)
    clock = Clock()
    simulation = Simulation(fake_kube, Scenario(start_seconds=5, run_seconds=60), clock)
    fake_kube.put(_pod("notebook", priority_class="development", grace=600))
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    assert fake_kube.get("v1", "Pod", "notebook", "team-a")["status"]["phase"] == "Running"
    return simulation, clock


def _read(kube_connection, name: str) -> dict | None:
    with KubeClient(kube_connection) as kube:
        pods = kube.resource("v1", "Pod").get(namespace="team-a").to_dict()["items"]
    return next((p for p in pods if p["metadata"]["name"] == name), None)


def test_a_higher_priority_pod_preempts_after_the_victims_grace_period_then_runs(sim, fake_kube, kube_connection):
    simulation, clock = sim
    fake_kube.put(_pod("serve", priority_class="production-inference"))
    simulation.tick()
    victim = _read(kube_connection, "notebook")
    [target] = [c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 600 and victim["metadata"]["deletionTimestamp"]
    assert victim["status"]["phase"] == "Running"  # it has its grace period to checkpoint
    preemptor = _read(kube_connection, "serve")
    assert preemptor["status"]["nominatedNodeName"] == f"{GPU_POOL}-5" and not preemptor["spec"].get("nodeName")
    [event] = [e for e in fake_kube.find("v1", "Event", "team-a") if e["reason"] == "Preempted"]
    assert event["message"] == f"Preempted by pod {preemptor['metadata']['uid']} on node {GPU_POOL}-5"
    assert event["involvedObject"]["name"] == "notebook" and event["related"]["name"] == "serve"

    clock.advance(599)
    simulation.tick()
    assert _read(kube_connection, "notebook")["status"]["phase"] == "Running"
    assert not _read(kube_connection, "serve")["spec"].get("nodeName")
    assert len([e for e in fake_kube.find("v1", "Event", "team-a") if e["reason"] == "Preempted"]) == 1

    clock.advance(1)
    simulation.tick()
    assert _read(kube_connection, "notebook") is None
    assert _read(kube_connection, "serve")["spec"]["nodeName"] == f"{GPU_POOL}-5"
    clock.advance(5)
    simulation.tick()
    assert _read(kube_connection, "serve")["status"]["phase"] == "Running"


def test_the_default_grace_period_is_thirty_seconds(fake_kube, kube_connection):
    fake_kube.put(nodes.namespace("team-a"))
    cluster.seed(fake_kube)
    for i in range(5):
        fake_kube.patch("v1", "Node", f"{GPU_POOL}-{i}", None, {"spec": {"unschedulable": True}})
    fake_kube.put(_priority_class("high", 10))
    clock = Clock()
    simulation = Simulation(fake_kube, Scenario(start_seconds=0, run_seconds=60), clock)
    fake_kube.put(_pod("low"))
    simulation.tick()
    simulation.tick()
    fake_kube.put(_pod("high", priority_class="high"))
    simulation.tick()
    assert _read(kube_connection, "low")["metadata"]["deletionGracePeriodSeconds"] == 30
    clock.advance(30)
    simulation.tick()
    assert _read(kube_connection, "low") is None and _read(kube_connection, "high")["spec"]["nodeName"]


def test_preemption_policy_never_waits_instead_of_preempting(sim, fake_kube, kube_connection):
    simulation, clock = sim
    fake_kube.put(_pod("batch", priority_class="batch-no-preempt"))  # the class says Never
    fake_kube.put(_pod("polite", priority_class="production-inference", never=True))  # the pod says Never
    simulation.tick()
    clock.advance(3600)
    simulation.tick()
    notebook = _read(kube_connection, "notebook")
    assert notebook["status"]["phase"] == "Running" and not notebook["metadata"].get("deletionTimestamp")
    assert not any(c["type"] == "DisruptionTarget" for c in notebook["status"]["conditions"])
    for name in ("batch", "polite"):
        pod = _read(kube_connection, name)
        assert not pod["spec"].get("nodeName") and not pod["status"].get("nominatedNodeName")
        assert pod["status"]["conditions"][0]["reason"] == "Unschedulable"


def test_equal_or_lower_priority_never_preempts(sim, fake_kube, kube_connection):
    simulation, clock = sim
    fake_kube.put(_pod("peer", priority_class="development"))
    fake_kube.put(_pod("nobody"))  # no class, no default class: priority 0
    simulation.tick()
    assert not _read(kube_connection, "notebook")["metadata"].get("deletionTimestamp")
    assert {_read(kube_connection, n)["status"]["conditions"][0]["reason"] for n in ("peer", "nobody")} == {
        "Unschedulable"}

"""The simulated cluster's loop (kubesim.kubelet) against the fake API server: binding, phases, the stalled-gang
scenario and mig-manager, read back over HTTPS with the portal's own Kubernetes client."""
from __future__ import annotations

import pytest

from kubesim import cluster, nodes
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario
from kubesim.scheduler import BURN_IN_NAMESPACE, allocatable, used_on_nodes
from provisioning.kube.client import KubeClient


class Clock:
    def __init__(self) -> None:
        self.now = 1_780_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _job(name: str, *, replicas: int, gpus: int, pool: str = "h100-train", tolerate: bool = True) -> dict:
    container = {"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    spec = {"restartPolicy": "Never", "containers": [container], "nodeSelector": {"gpu-portal.io/pool": pool}}
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"completionMode": "Indexed", "completions": replicas, "parallelism": replicas,
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


@pytest.fixture
def sim(fake_kube):
    fake_kube.put(nodes.namespace("team-a"))
    cluster.seed(fake_kube)
    clock = Clock()
    return Simulation(fake_kube, Scenario(start_seconds=5, run_seconds=60, stall_gangs=("stuck-",),
                                          time_scale=0.1), clock), clock


def _pods(fake, job: str) -> list[dict]:
    return fake.find("v1", "Pod", "team-a", f"batch.kubernetes.io/job-name={job}")


def test_gang_pods_bind_on_the_selected_tolerating_pool_and_run_to_completion(sim, fake_kube, kube_connection):
    simulation, clock = sim
    fake_kube.put(_job("train", replicas=2, gpus=8))
    simulation.tick()
    pods = _pods(fake_kube, "train")
    assert sorted(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for p in pods) == ["0", "1"]
    assert {p["spec"]["nodeName"] for p in pods} <= {f"h100-train-{i}" for i in range(6)}
    assert len({p["spec"]["nodeName"] for p in pods}) == 2  # 8 GPUs each: one whole node per rank
    assert all(p["status"]["phase"] == "Pending" for p in pods)
    clock.advance(5)
    simulation.tick()
    assert [p["status"]["phase"] for p in _pods(fake_kube, "train")] == ["Running", "Running"]
    clock.advance(60)
    simulation.tick()
    with KubeClient(kube_connection) as kube:  # what the portal reads, over HTTPS
        listed = kube.resource("v1", "Pod").get(namespace="team-a",
                                                label_selector="batch.kubernetes.io/job-name=train").to_dict()
    assert [p["status"]["phase"] for p in listed["items"]] == ["Succeeded", "Succeeded"]
    terminated = listed["items"][0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["reason"] == "Completed" and terminated["exitCode"] == 0
    job = fake_kube.get("batch/v1", "Job", "train", "team-a")
    assert {c["type"] for c in job["status"]["conditions"]} == {"SuccessCriteriaMet", "Complete"}
    assert job["status"]["succeeded"] == 2 and job["status"]["completedIndexes"] == "0,1"


def test_a_pod_without_the_toleration_is_unschedulable_with_the_schedulers_reasons(sim, fake_kube):
    simulation, _ = sim
    fake_kube.put(_job("untolerated", replicas=1, gpus=1, tolerate=False))
    simulation.tick()
    [pod] = _pods(fake_kube, "untolerated")
    assert "nodeName" not in pod["spec"]
    [condition] = pod["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("PodScheduled", "False", "Unschedulable")
    total = len(fake_kube.find("v1", "Node"))
    assert condition["message"].startswith(f"0/{total} nodes are available: ")
    assert "6 node(s) had untolerated taint {nvidia.com/gpu: present}" in condition["message"]
    assert f"{total - 6} node(s) didn't match Pod's node affinity/selector" in condition["message"]


def test_gpu_counts_are_honoured_a_full_pool_leaves_the_next_pod_pending(sim, fake_kube):
    simulation, _ = sim
    fake_kube.put(_job("big", replicas=6, gpus=8))
    fake_kube.put(_job("late", replicas=1, gpus=1))
    simulation.tick()
    assert all(p["spec"].get("nodeName") for p in _pods(fake_kube, "big"))
    [late] = _pods(fake_kube, "late")
    assert "6 Insufficient nvidia.com/gpu" in late["status"]["conditions"][0]["message"]


def test_cordoned_nodes_take_no_pods(sim, fake_kube):
    simulation, _ = sim
    for i in range(5):
        fake_kube.patch("v1", "Node", f"h100-train-{i}", None, {"spec": {"unschedulable": True}})
    fake_kube.put(_job("one", replicas=1, gpus=8))
    simulation.tick()
    assert [p["spec"]["nodeName"] for p in _pods(fake_kube, "one")] == ["h100-train-5"]


def test_the_stall_scenario_leaves_the_last_rank_pending_while_the_others_run(sim, fake_kube):
    simulation, clock = sim
    fake_kube.put(_job("stuck-pretrain", replicas=3, gpus=8))
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    by_index = {p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]: p
                for p in _pods(fake_kube, "stuck-pretrain")}
    assert [by_index[i]["status"]["phase"] for i in ("0", "1")] == ["Running", "Running"]
    last = by_index["2"]
    assert last["status"]["phase"] == "Pending" and "nodeName" not in last["spec"]
    condition = last["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == ("PodScheduled", "False", "Unschedulable")
    assert "6 Insufficient nvidia.com/gpu" in condition["message"]
    # What the scheduler says is what the inventory sees: burn-in pods of no team hold the room the rank would take.
    pods = fake_kube.find("v1", "Pod", None, "")
    burn_in = [p for p in pods if p["metadata"]["namespace"] == BURN_IN_NAMESPACE]
    assert len(burn_in) == 4 and all(p["spec"]["nodeName"].startswith("h100-train-") for p in burn_in)
    assert not any("gpu-portal.io" in key for p in burn_in for key in p["metadata"]["labels"])
    held = used_on_nodes(pods)
    free = {n["metadata"]["name"]: allocatable(n).get("nvidia.com/gpu", 0) - held.get(n["metadata"]["name"], {}).get(
        "nvidia.com/gpu", 0) for n in fake_kube.find("v1", "Node", None, "gpu-portal.io/pool=h100-train")}
    assert len(free) == 6 and max(free.values()) == 7, free  # just enough taken: smaller work still fits
    fake_kube.put(_job("small", replicas=1, gpus=4))
    simulation.tick()
    assert [p["spec"].get("nodeName", "")[:10] for p in _pods(fake_kube, "small")] == ["h100-train"]
    clock.advance(600)  # ten times the run time: the running ranks wait for their peer and never finish
    simulation.tick()
    phases = {p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]: p["status"]["phase"]
              for p in _pods(fake_kube, "stuck-pretrain")}
    assert phases == {"0": "Running", "1": "Running", "2": "Pending"}


def test_deployment_pods_run_and_its_status_counts_them(sim, fake_kube):
    simulation, clock = sim
    template = _job("x", replicas=1, gpus=1, pool="l40s-shared", tolerate=False)["spec"]["template"]
    template["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu.shared": "1"}}
    fake_kube.put({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "chat", "namespace": "team-a"},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": template}})
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    clock.advance(3600)
    simulation.tick()
    pods = fake_kube.find("v1", "Pod", "team-a", "app=x")
    assert [p["status"]["phase"] for p in pods] == ["Running", "Running"]
    assert {p["spec"]["nodeName"][:11] for p in pods} == {"l40s-shared"}
    assert fake_kube.get("apps/v1", "Deployment", "chat", "team-a")["status"]["readyReplicas"] == 2


def test_a_mig_layout_change_goes_pending_then_success_after_the_scaled_delay(sim, fake_kube):
    simulation, clock = sim
    fake_kube.patch("v1", "Node", "h200-mig-0", None, {"metadata": {"labels": {
        "nvidia.com/mig.config": "all-1g.18gb", "nvidia.com/mig.config.state": None}}})
    simulation.tick()
    labels = fake_kube.get("v1", "Node", "h200-mig-0")["metadata"]["labels"]
    assert labels["nvidia.com/mig.config.state"] == "pending"
    clock.advance(45 * 8 * 0.1 - 1)  # 45 s per GPU, 8 GPUs, time scale 0.1
    simulation.tick()
    assert fake_kube.get("v1", "Node", "h200-mig-0")["metadata"]["labels"]["nvidia.com/mig.config.state"] == "pending"
    clock.advance(1)
    simulation.tick()
    node = fake_kube.get("v1", "Node", "h200-mig-0")
    assert node["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    expected = {k: str(v) for k, v in nodes.mig_resources("H200-141GB", "all-1g.18gb").items()}
    assert {k: v for k, v in node["status"]["allocatable"].items() if k.startswith("nvidia.com/")} == expected
    untouched = fake_kube.get("v1", "Node", "h200-mig-1")["metadata"]["labels"]
    assert untouched["nvidia.com/mig.config"] == "all-1g.18gb" and untouched["nvidia.com/mig.config.state"] == "success"

"""Reads of live-cluster state against seeded nodes and pods moving through their phases."""
from __future__ import annotations

import pytest

from provisioning.kube.reads import list_pods, server_version, watch_pods

NS = "team-a"
REQUEST_LABEL = "gpu-portal.io/request-id"


def node(name: str, product: str | None) -> dict:
    labels = {"kubernetes.io/hostname": name}
    if product:
        labels |= {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "96", "memory": "1Ti", **({"nvidia.com/gpu": "8"} if product else {})},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "b",
                "containerRuntimeVersion": "containerd://2.1.0",
                "kernelVersion": "6.8.0",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.35.2",
                "machineID": "m",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04",
                "systemUUID": "s",
            },
        },
    }


def pod(name: str, request_id: str, namespace: str = NS) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {REQUEST_LABEL: request_id}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Pending"},
    }


@pytest.fixture
def seeded(fake_kube):
    for name in (NS, "team-b"):
        fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    fake_kube.put(node("gpu-1", "NVIDIA-H200"))
    fake_kube.put(node("cpu-1", None))
    fake_kube.put(pod("train-42-0", "42"))
    fake_kube.put(pod("train-42-1", "42", namespace="team-b"))
    fake_kube.put(pod("train-43-0", "43"))
    return fake_kube


@pytest.mark.parametrize("fake_kube_version", ["v1.36.1"])
def test_server_version(kube_client):
    assert server_version(kube_client) == "v1.36.1"


def test_list_pods_by_label_in_all_or_one_namespace(seeded, kube_client):
    everywhere = list_pods(kube_client, label_selector=f"{REQUEST_LABEL}=42")
    in_team_a = list_pods(kube_client, label_selector=f"{REQUEST_LABEL}=42", namespace=NS)

    assert sorted(p["metadata"]["name"] for p in everywhere) == ["train-42-0", "train-42-1"]
    assert [p["metadata"]["name"] for p in in_team_a] == ["train-42-0"]


def test_watch_pods_follows_phases_until_the_timeout(seeded, kube_client):
    seen = []
    for event in watch_pods(kube_client, label_selector=f"{REQUEST_LABEL}=42", namespace=NS, timeout_seconds=1):
        seen.append((event.type, event.object["status"]["phase"]))
        if len(seen) == 1:  # the pod starts, then finishes; another request's pod changes too
            seeded.patch_status("v1", "Pod", "train-42-0", NS, {"phase": "Running"})
            seeded.patch_status("v1", "Pod", "train-43-0", NS, {"phase": "Running"})
            seeded.patch_status("v1", "Pod", "train-42-0", NS, {"phase": "Succeeded"})

    assert seen == [("ADDED", "Pending"), ("MODIFIED", "Running"), ("MODIFIED", "Succeeded")]


def test_watch_pods_resumes_from_a_list_resource_version(seeded, kube_client, fake_kube):
    resource_version = fake_kube.get("v1", "Pod", "train-43-0", NS)["metadata"]["resourceVersion"]
    seeded.remove("v1", "Pod", "train-42-0", NS)

    events = list(watch_pods(
        kube_client, label_selector=f"{REQUEST_LABEL}=42", timeout_seconds=1, resource_version=resource_version
    ))  # fmt: skip

    assert [(e.type, e.object["metadata"]["name"], e.object["kind"]) for e in events] == [
        ("DELETED", "train-42-0", "Pod")
    ]

"""Discovery reads and node writes over HTTP against the fake API server: ResourceSlices, gang schedulers from API
discovery, non-terminated GPU pods, and merge patches of a node's labels and cordon state."""
from __future__ import annotations

import pytest

from provisioning.kube.client import ClusterConnection, KubeClient
from provisioning.kube.errors import PermanentKubeError, TransientKubeError
from provisioning.kube.inventory_reads import (
    get_node,
    installed_gang_schedulers,
    iter_gpu_pods,
    list_active_pods,
    list_all_nodes,
    list_pods_on_node,
    list_resource_claims,
    list_resource_slices,
    patch_node,
    served_group_versions,
    serves_admission_policies,
)
from kubesim import nodes as k
from kubesim import paging
from kubesim.server import FakeKubeAPI
from kubesim.resources import CUSTOM_RESOURCES, ServedResource


def test_resource_slices_and_claims_come_back_as_plain_dicts(fake_kube, kube_client):
    fake_kube.put(k.namespace("gpu-team-a"))
    fake_kube.put(k.b200_dra_node("gpu-b200-1"))
    fake_kube.put(k.resource_slice("gpu-b200-1"))
    pod = fake_kube.put(k.gpu_pod("dra-0", node="gpu-b200-1", claims=["gpu"], request_id=4))
    fake_kube.put(k.allocated_claim("dra-0-gpu", namespace="gpu-team-a", node="gpu-b200-1", devices=["gpu-0"],
                                    pod=pod))

    slices = list_resource_slices(kube_client)
    claims = list_resource_claims(kube_client)

    assert [(s["kind"], s["spec"]["nodeName"], len(s["spec"]["devices"])) for s in slices] == [
        ("ResourceSlice", "gpu-b200-1", 8)]
    assert claims[0]["status"]["reservedFor"][0]["uid"] == pod["metadata"]["uid"]


def test_gang_schedulers_are_read_from_the_served_api_groups():
    volcano_only = tuple(r for r in CUSTOM_RESOURCES if "volcano" in r.api_version)
    with FakeKubeAPI.start(git_version="v1.36.1", custom_resources=volcano_only) as fake:
        with KubeClient(ClusterConnection(server=fake.url, token="t", ca_cert=fake.ca_pem, request_timeout=2.0)) as kube:
            found = [g.as_dict() for g in installed_gang_schedulers(kube)]
    assert found == [
        {"backend": "native", "api_group": "scheduling.k8s.io", "versions": ["v1alpha2"]},
        {"backend": "volcano", "api_group": "scheduling.volcano.sh", "versions": ["v1beta1"]},
    ]


def test_no_gang_scheduler_on_a_bare_1_34_cluster():
    with FakeKubeAPI.start(git_version="v1.34.3", custom_resources=()) as fake:
        with KubeClient(ClusterConnection(server=fake.url, token="t", ca_cert=fake.ca_pem, request_timeout=2.0)) as kube:
            assert installed_gang_schedulers(kube) == []
            assert "scheduling.k8s.io" in served_group_versions(kube)  # v1 PriorityClass only


def test_admission_policies_are_found_only_where_the_api_server_serves_them(fake_kube, kube_client):
    assert serves_admission_policies(kube_client, served_group_versions(kube_client)) is False
    fake_kube.install(ServedResource("admissionregistration.k8s.io/v1", "validatingadmissionpolicies",
                                     "ValidatingAdmissionPolicy", False))
    assert serves_admission_policies(kube_client, served_group_versions(kube_client)) is True


def test_kai_and_kueue_are_recognised(fake_kube, kube_client):
    backends = {g.backend for g in installed_gang_schedulers(kube_client)}
    assert {"kai", "kueue", "volcano", "native"} == backends


def test_active_pods_leave_finished_ones_out_and_gpu_pods_are_picked(fake_kube, kube_client):
    fake_kube.put(k.namespace("gpu-team-a"))
    for pod in (k.gpu_pod("run", node="gpu-1", resources={"nvidia.com/gpu": 8}),
                k.gpu_pod("wait", node=None, phase="Pending", resources={"nvidia.com/gpu": 1}),
                k.gpu_pod("ok", node="gpu-1", phase="Succeeded", resources={"nvidia.com/gpu": 8}),
                k.gpu_pod("bad", node="gpu-1", phase="Failed", resources={"nvidia.com/gpu": 8}),
                k.gpu_pod("cpu", node="gpu-1", resources={}),
                k.gpu_pod("other-node", node="gpu-2", resources={"nvidia.com/mig-1g.18gb": 1})):
        fake_kube.put(pod)

    active = {p["metadata"]["name"] for p in list_active_pods(kube_client)}
    on_node = {p["metadata"]["name"] for p in list_pods_on_node(kube_client, "gpu-1")}

    assert active == {"run", "wait", "cpu", "other-node"}
    assert {p["metadata"]["name"] for p in iter_gpu_pods(list_active_pods(kube_client))} == {"run", "wait",
                                                                                            "other-node"}
    assert on_node == {"run", "cpu"}
    listing = [r for r in fake_kube.requests if r.path == "/api/v1/pods"][0]
    assert listing.params["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"


def test_cordon_label_and_uncordon_are_merge_patches_that_leave_other_labels_alone(fake_kube, kube_client):
    fake_kube.put(k.h200_mig_node("gpu-h200-1"))

    patch_node(kube_client, "gpu-h200-1", unschedulable=True)
    patch_node(kube_client, "gpu-h200-1", labels={"nvidia.com/mig.config": "all-1g.18gb",
                                                  "nvidia.com/mig.config.state": None})
    cordoned = get_node(kube_client, "gpu-h200-1")
    patch_node(kube_client, "gpu-h200-1", unschedulable=False)
    uncordoned = fake_kube.get("v1", "Node", "gpu-h200-1")

    assert cordoned["spec"]["unschedulable"] is True
    labels = cordoned["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"] == "all-1g.18gb" and "nvidia.com/mig.config.state" not in labels
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert "unschedulable" not in uncordoned["spec"]
    writes = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert {r.content_type for r in writes} == {"application/merge-patch+json"}
    assert writes[0].body == {"spec": {"unschedulable": True}}
    with pytest.raises(ValueError):
        patch_node(kube_client, "gpu-h200-1")


def test_errors_are_classified(fake_kube, kube_client):
    fake_kube.put(k.h100_node("gpu-1"))
    fake_kube.fail_next("GET", r"^/api/v1/nodes$", 503, message="etcd is slow")
    with pytest.raises(TransientKubeError, match="list nodes: etcd is slow"):
        list_all_nodes(kube_client)
    with pytest.raises(PermanentKubeError, match="not found"):
        patch_node(kube_client, "missing", unschedulable=True)
    fake_kube.fail_next("PATCH", r"/nodes/gpu-1$", 403, message='nodes "gpu-1" is forbidden')
    with pytest.raises(PermanentKubeError, match="forbidden"):
        patch_node(kube_client, "gpu-1", unschedulable=True)


def test_long_lists_are_followed_page_by_page(fake_kube, kube_client):
    """A real API server answers `limit` with pages and a `continue` token: the first page (of one node) is
    injected the way a server would send it, and the fake serves the rest from the token."""
    first = k.h100_node("gpu-1")
    first.pop("apiVersion"), first.pop("kind")
    revision = fake_kube.put(k.h100_node("gpu-2"))["metadata"]["resourceVersion"]
    token = paging.encode_continue("gpu-1\x00", int(revision))
    fake_kube.fail_next("GET", r"^/api/v1/nodes$", 200, body={
        "kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": revision, "continue": token},
        "items": [first]})

    names = [n["metadata"]["name"] for n in list_all_nodes(kube_client)]

    assert names == ["gpu-1", "gpu-2"]
    lists = [r.params for r in fake_kube.requests if r.path == "/api/v1/nodes"]
    assert lists == [{"limit": "500"}, {"limit": "500", "continue": token}]

"""KubernetesApplier against the fake API server, over HTTP with the real `kubernetes` client."""
from __future__ import annotations

import dataclasses
import socket

import pytest

from provisioning.appliers.base import Applier
from provisioning.kube.apply import KubernetesApplier
from provisioning.kube.client import ClusterConnection
from provisioning.kube.errors import PermanentKubeError, TransientKubeError

TEAM_NS = "team-vision"
REQUEST = {"gpu-portal.io/request-id": "42"}
OTHER_REQUEST = {"gpu-portal.io/request-id": "43"}
REQUEST_KINDS = [
    ("batch/v1", "Job"),
    ("v1", "Service"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
]


def request_objects(name: str = "train-42", labels: dict[str, str] = REQUEST) -> list[dict]:
    """What the renderer produces for one gang-scheduled training request: team objects first."""
    pod_labels = {**labels, "gpu-portal.io/request": name}
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": TEAM_NS, "labels": {"gpu-portal.io/team": "vision"}},
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpu-quota", "namespace": TEAM_NS},
            "spec": {"hard": {"requests.nvidia.com/gpu": "16"}},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": TEAM_NS, "labels": labels},
            "spec": {"minMember": 2, "queue": "vision"},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": TEAM_NS, "labels": labels},
            "spec": {"clusterIP": "None", "selector": pod_labels},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": TEAM_NS, "labels": labels},
            "spec": {
                "completionMode": "Indexed",
                "completions": 2,
                "parallelism": 2,
                "template": {
                    "metadata": {"labels": pod_labels},
                    "spec": {
                        "restartPolicy": "Never",
                        "subdomain": name,
                        "schedulerName": "volcano",
                        "containers": [
                            {
                                "name": "trainer",
                                "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}},
                            }
                        ],
                    },
                },
            },
        },
    ]


@pytest.fixture
def applier(kube_connection):
    applier = KubernetesApplier(kube_connection)
    yield applier
    applier.close()


def writes(fake_kube):
    return [r for r in fake_kube.requests if r.method != "GET"]


def test_kubernetes_applier_is_an_applier(applier):
    assert isinstance(applier, Applier)


def test_apply_server_side_applies_each_object_in_order(fake_kube, applier):
    objects = request_objects()

    refs = applier.apply(objects)

    assert [(r.method, r.path) for r in writes(fake_kube)] == [
        ("PATCH", "/api/v1/namespaces/team-vision"),
        ("PATCH", "/api/v1/namespaces/team-vision/resourcequotas/gpu-quota"),
        ("PATCH", "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-vision/podgroups/train-42"),
        ("PATCH", "/api/v1/namespaces/team-vision/services/train-42"),
        ("PATCH", "/apis/batch/v1/namespaces/team-vision/jobs/train-42"),
    ]
    for request in writes(fake_kube):
        assert request.content_type == "application/apply-patch+yaml"
        assert request.params["fieldManager"] == "gpu-portal"
        assert request.params["force"] == "true"
        assert request.headers["Authorization"] == "Bearer test-token"
    assert [(r.kind, r.namespace, r.name) for r in refs] == [
        ("Namespace", "", TEAM_NS),
        ("ResourceQuota", TEAM_NS, "gpu-quota"),
        ("PodGroup", TEAM_NS, "train-42"),
        ("Service", TEAM_NS, "train-42"),
        ("Job", TEAM_NS, "train-42"),
    ]
    for ref, obj in zip(refs, objects, strict=True):
        meta = obj["metadata"]
        stored = fake_kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        assert stored["spec"] == {**stored["spec"], **obj.get("spec", {})}
        assert ref.uid == stored["metadata"]["uid"] != ""
        assert ref.resource_version == stored["metadata"]["resourceVersion"]
        assert stored["metadata"]["managedFields"][0]["manager"] == "gpu-portal"


def test_second_apply_of_the_same_objects_changes_nothing(fake_kube, applier):
    first = applier.apply(request_objects())

    second = applier.apply(request_objects())

    assert second == first  # same uids, same resourceVersions: the server saw no change
    job = fake_kube.emulator.objects["batch/v1/jobs", TEAM_NS, "train-42"]
    assert len(job.history) == 1


def test_apply_takes_back_a_field_edited_by_hand(fake_kube, applier):
    applier.apply(request_objects())
    fake_kube.patch("batch/v1", "Job", "train-42", TEAM_NS, {"spec": {"parallelism": 1}})

    applier.apply(request_objects())

    assert fake_kube.get("batch/v1", "Job", "train-42", TEAM_NS)["spec"]["parallelism"] == 2


def test_apply_drops_a_field_no_longer_rendered(fake_kube, applier):
    applier.apply(request_objects())
    objects = request_objects()
    del objects[2]["spec"]["queue"]

    applier.apply(objects)

    assert "queue" not in fake_kube.get("scheduling.volcano.sh/v1beta1", "PodGroup", "train-42", TEAM_NS)["spec"]


def test_server_error_is_transient_and_the_retry_succeeds(fake_kube, applier):
    fake_kube.fail_next("PATCH", r"/jobs/train-42$", 500, message="etcdserver: request timed out")

    with pytest.raises(TransientKubeError) as caught:
        applier.apply(request_objects())

    assert caught.value.status == 500
    assert "etcdserver: request timed out" in caught.value.message
    assert fake_kube.get("batch/v1", "Job", "train-42", TEAM_NS) is None  # a refused write changes nothing
    refs = applier.apply(request_objects())
    assert refs[-1].kind == "Job" and refs[-1].uid


def test_invalid_object_is_permanent_with_the_servers_message(fake_kube, applier):
    message = 'Job.batch "train-42" is invalid: spec.completions: Invalid value: 2: must equal parallelism'
    fake_kube.fail_next("PATCH", r"/jobs/", 422, message=message)

    with pytest.raises(PermanentKubeError) as caught:
        applier.apply(request_objects())

    assert caught.value.status == 422
    assert caught.value.message == f"apply batch/v1 Job {TEAM_NS}/train-42: {message}"


def test_throttling_is_transient_with_retry_after(fake_kube, applier):
    fake_kube.fail_next("PATCH", r"/podgroups/", 429, message="too many requests", headers={"Retry-After": "7"})

    with pytest.raises(TransientKubeError) as caught:
        applier.apply(request_objects())

    assert caught.value.status == 429
    assert caught.value.retry_after == 7


def test_conflict_is_transient(fake_kube, applier):
    fake_kube.fail_next("PATCH", r"/services/", 409, message="the object has been modified")

    with pytest.raises(TransientKubeError) as caught:
        applier.apply(request_objects())

    assert caught.value.status == 409


def test_forbidden_is_permanent(fake_kube, applier):
    fake_kube.fail_next("PATCH", r"/namespaces/team-vision$", 403, message='namespaces "team-vision" is forbidden')

    with pytest.raises(PermanentKubeError) as caught:
        applier.apply(request_objects())

    assert caught.value.status == 403
    assert "forbidden" in caught.value.message


def test_slow_server_is_a_transient_timeout(fake_kube, kube_connection):
    applier = KubernetesApplier(dataclasses.replace(kube_connection, request_timeout=0.3))
    applier.apply(request_objects())  # discovery done at normal speed
    fake_kube.delay_next("PATCH", r"/jobs/", seconds=1.0)

    with pytest.raises(TransientKubeError) as caught:
        applier.apply(request_objects())

    assert "ReadTimeoutError" in caught.value.message
    assert caught.value.status is None
    assert applier.apply(request_objects())[-1].kind == "Job"


def test_unreachable_server_is_transient():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    applier = KubernetesApplier(
        ClusterConnection(server=f"http://127.0.0.1:{port}", insecure_skip_tls_verify=True, request_timeout=2)
    )

    with pytest.raises(TransientKubeError) as caught:
        applier.apply(request_objects())

    assert caught.value.message.startswith("API discovery: NewConnectionError")


@pytest.mark.parametrize("fake_kube_version", ["v1.34.3"])
def test_kind_the_cluster_does_not_serve_is_permanent(applier):
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "train-42", "namespace": TEAM_NS},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]},
    }

    with pytest.raises(PermanentKubeError) as caught:
        applier.apply([workload])

    assert "does not serve scheduling.k8s.io/v1alpha1 Workload" in caught.value.message


def test_namespaced_object_without_namespace_is_permanent(applier):
    job = request_objects()[-1]
    del job["metadata"]["namespace"]

    with pytest.raises(PermanentKubeError, match="needs metadata.namespace"):
        applier.apply([job])


def test_object_before_its_namespace_is_rejected_by_the_server(applier):
    with pytest.raises(PermanentKubeError) as caught:
        applier.apply(request_objects()[1:])

    assert caught.value.status == 404
    assert 'namespaces "team-vision" not found' in caught.value.message


def test_delete_removes_exactly_the_requests_objects(fake_kube, applier):
    applier.apply(request_objects("train-42", REQUEST))
    applier.apply(request_objects("train-43", OTHER_REQUEST))

    deleted = applier.delete(REQUEST, [TEAM_NS], REQUEST_KINDS)

    assert sorted((r.kind, r.name) for r in deleted) == [
        ("Job", "train-42"),
        ("PodGroup", "train-42"),
        ("Service", "train-42"),
    ]
    for api_version, kind in REQUEST_KINDS:
        assert [o["metadata"]["name"] for o in fake_kube.find(api_version, kind, TEAM_NS)] == ["train-43"]
    assert fake_kube.get("v1", "Namespace", TEAM_NS) is not None
    assert fake_kube.get("v1", "ResourceQuota", "gpu-quota", TEAM_NS) is not None


def test_delete_covers_cluster_scoped_kinds(fake_kube, applier):
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "train-42", "labels": REQUEST},
        "spec": {"namespaceSelector": {}},
    }
    applier.apply([queue])

    deleted = applier.delete(REQUEST, [TEAM_NS], [("kueue.x-k8s.io/v1beta2", "ClusterQueue")])

    assert [(r.kind, r.namespace, r.name) for r in deleted] == [("ClusterQueue", "", "train-42")]
    assert fake_kube.find("kueue.x-k8s.io/v1beta2", "ClusterQueue") == []


def test_delete_uses_label_selector_and_propagation_policy(fake_kube, applier):
    applier.apply(request_objects())

    applier.delete(REQUEST, [TEAM_NS], REQUEST_KINDS)

    lists = [r for r in fake_kube.requests if r.method == "GET" and "labelSelector" in r.params]
    assert {r.params["labelSelector"] for r in lists} == {"gpu-portal.io/request-id=42"}
    deletes = {r.path.rsplit("/", 2)[-2]: r.body for r in fake_kube.requests if r.method == "DELETE"}
    assert deletes["jobs"]["propagationPolicy"] == "Foreground"
    assert deletes["services"]["propagationPolicy"] == "Background"
    assert all(body["preconditions"]["uid"] for body in deletes.values())


def test_deleting_a_job_removes_its_pods(fake_kube, applier):
    refs = applier.apply(request_objects())
    job = refs[-1]
    fake_kube.put(pod("train-42-0", owner_uid=job.uid))

    applier.delete(REQUEST, [TEAM_NS], REQUEST_KINDS)

    assert fake_kube.get("v1", "Pod", "train-42-0", TEAM_NS) is None


def test_second_delete_finds_nothing_and_does_not_fail(fake_kube, applier):
    applier.apply(request_objects())
    applier.delete(REQUEST, [TEAM_NS], REQUEST_KINDS)

    assert applier.delete(REQUEST, [TEAM_NS], REQUEST_KINDS) == []


def test_delete_of_an_object_gone_meanwhile_is_skipped(fake_kube, applier):
    applier.apply(request_objects())
    fake_kube.fail_next("DELETE", r"/services/train-42$", 404, message='services "train-42" not found')

    deleted = applier.delete(REQUEST, [TEAM_NS], REQUEST_KINDS)

    assert sorted(r.kind for r in deleted) == ["Job", "PodGroup"]


def test_delete_in_a_namespace_that_does_not_exist_finds_nothing(applier):
    assert applier.delete(REQUEST, ["nowhere"], REQUEST_KINDS) == []


def test_delete_refuses_an_empty_selector(applier):
    with pytest.raises(ValueError, match="non-empty label selector"):
        applier.delete({}, [TEAM_NS], REQUEST_KINDS)


def pod(name: str, *, owner_uid: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": TEAM_NS,
            "labels": REQUEST,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-42", "uid": owner_uid}],
        },
        "spec": {"containers": [{"name": "trainer", "image": "busybox"}]},
        "status": {"phase": "Running"},
    }

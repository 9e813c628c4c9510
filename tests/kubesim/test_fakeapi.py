"""The fake API server behaves like a real one where our code depends on it (checked with the real client)."""
from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError

from provisioning.kube.client import raw

NS = "team-a"


def namespace(name: str = NS) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def config_map(name: str, labels: dict[str, str] | None = None, data: dict | None = None) -> dict:
    meta = {"name": name, "namespace": NS, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"k": "v"}}


@pytest.fixture
def core(kube_client):
    return client.CoreV1Api(kube_client.api_client)


@pytest.fixture
def dyn(kube_client):
    return kube_client.dynamic


@pytest.fixture
def config_maps(kube_client, fake_kube):
    fake_kube.put(namespace())
    return kube_client.resource("v1", "ConfigMap")


def http_get(kube_client, path: str) -> tuple[int, dict]:
    response = kube_client.api_client.call_api("GET", kube_client.connection.server + path)
    return response.status, json.loads(response.read())


# -- discovery and /version ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fake_kube_version", ["v1.36.1"])
def test_version_is_configurable(kube_client):
    status, version = http_get(kube_client, "/version")

    assert status == 200
    assert (version["gitVersion"], version["major"], version["minor"]) == ("v1.36.1", "1", "36")


@pytest.mark.parametrize(
    ("fake_kube_version", "served", "absent"),
    [
        ("v1.34.3", [], ["scheduling.k8s.io/v1alpha1"]),
        ("v1.35.2", ["scheduling.k8s.io/v1alpha1"], ["scheduling.k8s.io/v1alpha2"]),
        ("v1.36.1", ["scheduling.k8s.io/v1alpha2"], ["scheduling.k8s.io/v1alpha1"]),
        ("v1.37.0", ["scheduling.k8s.io/v1beta1"], ["scheduling.k8s.io/v1alpha2"]),
    ],
)
def test_workload_api_follows_the_kubernetes_version(kube_client, served, absent):
    _, groups = http_get(kube_client, "/apis")
    versions = {v["groupVersion"] for g in groups["groups"] for v in g["versions"]}

    assert set(served) <= versions
    assert not set(absent) & versions


@pytest.mark.parametrize(
    ("api_version", "kind", "namespaced"),
    [
        ("scheduling.volcano.sh/v1beta1", "PodGroup", True),
        ("scheduling.run.ai/v2alpha2", "PodGroup", True),
        ("scheduling.run.ai/v2", "Queue", False),
        ("kueue.x-k8s.io/v1beta2", "LocalQueue", True),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", False),
        ("resource.k8s.io/v1", "ResourceClaimTemplate", True),
        ("resource.k8s.io/v1", "ResourceSlice", False),
        ("v1", "Node", False),
    ],
)
def test_discovery_shows_builtin_and_custom_resources(kube_client, api_version, kind, namespaced):
    assert kube_client.resource(api_version, kind).namespaced is namespaced


def test_preferred_version_is_the_most_stable(kube_client):
    _, group = http_get(kube_client, "/apis/scheduling.k8s.io")

    assert group["preferredVersion"]["groupVersion"] == "scheduling.k8s.io/v1"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha1"]


# -- create, read, list -------------------------------------------------------------------------------------------


def test_create_namespace_answers_201_with_server_metadata(core, kube_client):
    created, status, _ = core.create_namespace_with_http_info(client.V1Namespace(metadata={"name": NS}))

    assert status == 201
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    assert created.metadata.labels == {"kubernetes.io/metadata.name": NS}
    assert core.read_namespace(NS).status.phase == "Active"
    # The API server's own namespaces are there from the start.
    assert [n.metadata.name for n in core.list_namespace().items] == [
        "default", "kube-node-lease", "kube-public", "kube-system", NS]


def test_create_twice_is_a_conflict(dyn, config_maps):
    dyn.create(config_maps, body=config_map("a"), namespace=NS)

    with pytest.raises(ConflictError) as caught:
        dyn.create(config_maps, body=config_map("a"), namespace=NS)

    assert json.loads(caught.value.body)["reason"] == "AlreadyExists"


def test_write_into_a_missing_namespace_is_not_found(dyn, kube_client):
    with pytest.raises(NotFoundError) as caught:
        dyn.create(kube_client.resource("v1", "ConfigMap"), body=config_map("a"), namespace=NS)

    assert json.loads(caught.value.body)["message"] == 'namespaces "team-a" not found'


def test_resource_versions_increase(dyn, config_maps):
    created = [dyn.create(config_maps, body=config_map(name), namespace=NS, serializer=raw) for name in "abc"]
    versions = [int(obj["metadata"]["resourceVersion"]) for obj in created]

    assert versions == sorted(versions) and len(set(versions)) == 3


def test_list_answer_carries_kind_and_api_version(dyn, config_maps, fake_kube):
    fake_kube.put(config_map("a"))

    listed = dyn.get(config_maps, namespace=NS, serializer=raw)

    assert (listed["kind"], listed["apiVersion"]) == ("ConfigMapList", "v1")
    assert listed["metadata"]["resourceVersion"]
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=gpu", ["a", "b"]),
        ("tier==gpu,size=big", ["a"]),
        ("tier!=gpu", ["c", "d"]),
        ("size in (big, small)", ["a", "b", "c"]),
        ("size notin (big)", ["b", "c", "d"]),
        ("size", ["a", "b", "c"]),
        ("!size", ["d"]),
        ("tier=gpu,size in (small,tiny)", ["b"]),
    ],
)
def test_list_honours_label_selectors(dyn, config_maps, fake_kube, selector, expected):
    fake_kube.put(config_map("a", {"tier": "gpu", "size": "big"}))
    fake_kube.put(config_map("b", {"tier": "gpu", "size": "small"}))
    fake_kube.put(config_map("c", {"tier": "cpu", "size": "small"}))
    fake_kube.put(config_map("d"))

    listed = dyn.get(config_maps, namespace=NS, label_selector=selector, serializer=raw)

    assert [item["metadata"]["name"] for item in listed["items"]] == expected


def test_malformed_label_selector_is_a_bad_request(dyn, config_maps):
    with pytest.raises(Exception) as caught:
        dyn.get(config_maps, namespace=NS, label_selector="a in b")

    assert caught.value.status == 400


# -- server-side apply --------------------------------------------------------------------------------------------


def apply(dyn, resource, body, manager="gpu-portal", force=True):
    return dyn.server_side_apply(resource, body=body, field_manager=manager, force_conflicts=force, serializer=raw)


def test_apply_creates_then_merges(dyn, config_maps, fake_kube):
    created = apply(dyn, config_maps, config_map("a", data={"x": "1"}))
    updated = apply(dyn, config_maps, config_map("a", data={"x": "2"}))

    apply_requests = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert [r.content_type for r in apply_requests] == ["application/apply-patch+yaml"] * 2
    assert created["metadata"]["uid"] == updated["metadata"]["uid"]
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["data"] == {"x": "2"}
    assert [(m["manager"], m["operation"]) for m in updated["metadata"]["managedFields"]] == [("gpu-portal", "Apply")]


def test_apply_status_codes(kube_client, fake_kube):
    fake_kube.put(namespace())
    path = f"{kube_client.connection.server}/api/v1/namespaces/{NS}/configmaps/a?fieldManager=gpu-portal"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    body = config_map("a")

    first = kube_client.api_client.call_api("PATCH", path, headers, body)
    second = kube_client.api_client.call_api("PATCH", path, headers, body)

    assert (first.status, second.status) == (201, 200)


def test_unchanged_apply_keeps_the_resource_version(dyn, config_maps):
    first = apply(dyn, config_maps, config_map("a"))
    second = apply(dyn, config_maps, config_map("a"))

    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_apply_conflicts_with_another_manager_unless_forced(dyn, config_maps, fake_kube):
    apply(dyn, config_maps, config_map("a", data={"x": "1"}), manager="kubectl")

    with pytest.raises(ConflictError) as caught:
        apply(dyn, config_maps, config_map("a", data={"x": "2"}), force=False)
    forced = apply(dyn, config_maps, config_map("a", data={"x": "2"}), force=True)

    assert 'conflict with "kubectl"' in json.loads(caught.value.body)["message"]
    assert forced["data"] == {"x": "2"}
    owned = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
    assert owned["gpu-portal"]["f:data"] == {"f:x": {}}
    assert "f:data" not in owned["kubectl"]  # the forced field changed hands; the shared labels stay shared


def test_apply_leaves_fields_of_other_managers_alone(dyn, config_maps):
    apply(dyn, config_maps, config_map("a", data={"x": "1"}), manager="kubectl")

    result = apply(dyn, config_maps, {**config_map("a"), "data": {"y": "2"}})

    assert result["data"] == {"x": "1", "y": "2"}


def test_apply_without_field_manager_is_a_bad_request(kube_client, fake_kube):
    fake_kube.put(namespace())
    path = f"{kube_client.connection.server}/api/v1/namespaces/{NS}/configmaps/a"

    headers = {"Content-Type": "application/apply-patch+yaml"}

    response = kube_client.api_client.call_api("PATCH", path, headers, config_map("a"))

    assert response.status == 400


def test_apply_ignores_status_of_kinds_with_a_status_subresource(dyn, kube_client, fake_kube):
    fake_kube.put(namespace())
    jobs = kube_client.resource("batch/v1", "Job")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": NS},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"succeeded": 9},
    }

    assert "status" not in apply(dyn, jobs, job)


def test_a_status_merge_patch_changes_only_status_and_checks_the_resource_version(dyn, kube_client, fake_kube):
    fake_kube.put(namespace())
    workload = fake_kube.put({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                              "metadata": {"name": "w", "namespace": NS}, "spec": {"active": True},
                              "status": {"admissionChecks": [{"name": "a", "state": "Pending"}]}})
    status = kube_client.resource("kueue.x-k8s.io/v1beta2", "Workload").subresources["status"]
    body = {"metadata": {"resourceVersion": workload["metadata"]["resourceVersion"]}, "spec": {"active": False},
            "status": {"admissionChecks": [{"name": "a", "state": "Ready"}]}}

    patched = dyn.patch(status, body=body, name="w", namespace=NS, content_type="application/merge-patch+json",
                        serializer=raw)

    assert patched["status"]["admissionChecks"] == [{"name": "a", "state": "Ready"}]
    assert patched["spec"] == {"active": True}  # a status subresource ignores the rest of the body
    assert patched["metadata"]["generation"] == workload["metadata"]["generation"]
    with pytest.raises(ConflictError):  # sent with the resourceVersion it read before: someone wrote since
        dyn.patch(status, body=body, name="w", namespace=NS, content_type="application/merge-patch+json")


# -- watch ----------------------------------------------------------------------------------------------------------


def test_watch_streams_existing_then_live_events_matching_the_selector(kube_client, config_maps, fake_kube):
    fake_kube.put(config_map("old", {"app": "x"}))
    fake_kube.put(config_map("other", {"app": "y"}))
    stream = watch.Watch().stream(
        config_maps.get, namespace=NS, label_selector="app=x", timeout_seconds=1, serialize=False
    )

    events = []
    for event in stream:
        events.append((event["type"], event["object"]["metadata"]["name"]))
        if len(events) == 1:
            fake_kube.put(config_map("new", {"app": "x"}))
            fake_kube.put(config_map("ignored", {"app": "y"}))
            fake_kube.patch("v1", "ConfigMap", "old", NS, {"metadata": {"labels": {"app": "z"}}})

    assert events == [("ADDED", "old"), ("ADDED", "new"), ("DELETED", "old")]


def test_watch_from_a_resource_version_replays_later_changes(kube_client, config_maps, fake_kube):
    listed = kube_client.dynamic.get(config_maps, namespace=NS, serializer=raw)
    fake_kube.put(config_map("a"))
    fake_kube.remove("v1", "ConfigMap", "a", NS)

    since = listed["metadata"]["resourceVersion"]

    stream = watch.Watch().stream(
        config_maps.get, namespace=NS, resource_version=since, timeout_seconds=1, serialize=False
    )

    assert [(e["type"], e["object"]["metadata"]["name"]) for e in stream] == [("ADDED", "a"), ("DELETED", "a")]


def test_watch_from_a_malformed_resource_version_is_a_bad_request(kube_client, config_maps):
    stream = watch.Watch().stream(config_maps.get, namespace=NS, resource_version="yesterday", timeout_seconds=1)

    with pytest.raises(Exception) as caught:
        list(stream)

    assert caught.value.status == 400


def test_watch_ends_after_timeout_seconds(kube_client, config_maps):
    stream = watch.Watch().stream(config_maps.get, namespace=NS, timeout_seconds=1, serialize=False)

    assert list(stream) == []


# -- delete ---------------------------------------------------------------------------------------------------------


def test_delete_collection_honours_the_label_selector(dyn, config_maps, fake_kube):
    fake_kube.put(config_map("a", {"req": "1"}))
    fake_kube.put(config_map("b", {"req": "2"}))

    deleted = dyn.delete(config_maps, namespace=NS, label_selector="req=1", serializer=raw)

    assert [item["metadata"]["name"] for item in deleted["items"]] == ["a"]
    assert [o["metadata"]["name"] for o in fake_kube.find("v1", "ConfigMap", NS)] == ["b"]


def test_delete_missing_object_is_not_found(dyn, config_maps):
    with pytest.raises(NotFoundError) as caught:
        dyn.delete(config_maps, name="nope", namespace=NS)

    assert json.loads(caught.value.body)["message"] == 'configmaps "nope" not found'


def test_delete_with_a_stale_uid_precondition_is_a_conflict(dyn, config_maps, fake_kube):
    fake_kube.put(config_map("a"))
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "someone-else"}}

    with pytest.raises(ConflictError):
        dyn.delete(config_maps, name="a", namespace=NS, body=options)


def test_deleting_a_namespace_deletes_its_content(core, fake_kube):
    fake_kube.put(namespace())
    fake_kube.put(config_map("a"))

    core.delete_namespace(NS)

    assert fake_kube.find("v1", "ConfigMap") == []
    assert fake_kube.get("v1", "Namespace", NS) is None


def test_finalizers_hold_deletion_until_removed(dyn, config_maps, fake_kube):
    fake_kube.put({**config_map("a"), "metadata": {**config_map("a")["metadata"], "finalizers": ["example.com/hold"]}})

    held = dyn.delete(config_maps, name="a", namespace=NS, serializer=raw)
    fake_kube.patch("v1", "ConfigMap", "a", NS, {"metadata": {"finalizers": None}})

    assert held["metadata"]["deletionTimestamp"]
    assert fake_kube.get("v1", "ConfigMap", "a", NS) is None


def test_job_deletion_orphans_pods_by_default_like_the_api(kube_client, fake_kube):
    fake_kube.put(namespace())
    job_meta = {"name": "j", "namespace": NS}
    job = fake_kube.put({"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": {}})
    owner = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"]}]
    pod_meta = {"name": "p", "namespace": NS, "ownerReferences": owner}
    fake_kube.put({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": {}})
    path = f"{kube_client.connection.server}/apis/batch/v1/namespaces/{NS}/jobs/j"

    response = kube_client.api_client.call_api("DELETE", path, {"Content-Type": "application/json"})

    assert "child pods are preserved" in response.headers["Warning"]
    assert "ownerReferences" not in fake_kube.get("v1", "Pod", "p", NS)["metadata"]


# -- seeding ---------------------------------------------------------------------------------------------------------


def test_put_replaces_an_object_keeping_its_identity(fake_kube, config_maps):
    first = fake_kube.put(config_map("a", data={"x": "1"}))

    second = fake_kube.put(config_map("a", data={"x": "2"}))

    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert fake_kube.get("v1", "ConfigMap", "a", NS)["data"] == {"x": "2"}


# -- fault injection ------------------------------------------------------------------------------------------------


def test_fail_next_hits_only_the_next_matching_requests(dyn, config_maps, fake_kube):
    fake_kube.put(config_map("a"))
    dyn.get(config_maps, name="a", namespace=NS)  # before the fault: not counted
    fake_kube.fail_next("GET", r"/configmaps/a$", 503, times=2, message="overloaded")

    failures = []
    for _ in range(3):
        try:
            dyn.get(config_maps, name="a", namespace=NS)
            failures.append(None)
        except Exception as exc:  # noqa: BLE001
            failures.append((exc.status, json.loads(exc.body)["message"]))

    assert failures == [(503, "overloaded"), (503, "overloaded"), None]

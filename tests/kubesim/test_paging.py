"""The fake API server paginates LISTs and compacts its history as kube-apiserver does (kubesim/paging.py), checked
over HTTPS with the real client: pages of `limit` items with a `continue` token, every page of one list served at
the first page's revision, 400 for a token that does not decode, 410 Expired for a continue token or a watch
resourceVersion older than the compacted revision."""
from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kubesim import paging

NS = "team-a"


def config_map(name: str, namespace: str = NS, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "x"}}, "data": {"k": "v"}}


def get(kube_client, path: str, **params) -> tuple[int, dict]:
    """The status and the decoded body of a GET, whatever the status."""
    url = kube_client.connection.server + path + ("?" + urlencode(params) if params else "")
    response = kube_client.api_client.call_api("GET", url)
    return response.status, json.loads(response.read())


@pytest.fixture
def maps(fake_kube):
    for namespace in (NS, "team-b"):
        fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for i in range(5):
        fake_kube.put(config_map(f"cm-{i}"))
    fake_kube.put(config_map("cm-0", namespace="team-b", labels={"app": "y"}))
    return fake_kube


def names(body: dict) -> list[str]:
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in body["items"]]


def test_a_list_with_a_limit_comes_in_pages_that_follow_the_continue_token(maps, kube_client):
    status, first = get(kube_client, "/api/v1/configmaps", limit=2)
    assert status == 200 and names(first) == ["team-a/cm-0", "team-a/cm-1"]
    assert first["metadata"]["remainingItemCount"] == 4  # no selector: the server may say how many remain
    start, revision = paging.decode_continue(first["metadata"]["continue"])
    assert (start, str(revision)) == ("team-a/cm-1\x00", first["metadata"]["resourceVersion"])

    seen, token = names(first), first["metadata"]["continue"]
    while token:
        _, page = get(kube_client, "/api/v1/configmaps", limit=2, **{"continue": token})
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        seen, token = seen + names(page), page["metadata"].get("continue")
    assert seen == [f"team-a/cm-{i}" for i in range(5)] + ["team-b/cm-0"]

    _, selected = get(kube_client, "/api/v1/configmaps", limit=2, labelSelector="app=x")
    assert names(selected) == ["team-a/cm-0", "team-a/cm-1"] and "remainingItemCount" not in selected["metadata"]
    _, everything = get(kube_client, "/api/v1/configmaps")  # no limit: one page
    assert len(everything["items"]) == 6 and "continue" not in everything["metadata"]


def test_every_page_of_a_list_is_the_snapshot_of_its_first_page(maps, kube_client):
    _, first = get(kube_client, f"/api/v1/namespaces/{NS}/configmaps", limit=2)
    maps.remove("v1", "ConfigMap", "cm-3", NS)  # changes after the first page...
    maps.put(config_map("cm-5"))
    maps.patch("v1", "ConfigMap", "cm-2", NS, {"data": {"k": "changed"}})

    _, rest = get(kube_client, f"/api/v1/namespaces/{NS}/configmaps", **{"continue": first["metadata"]["continue"]})

    assert names(rest) == ["team-a/cm-2", "team-a/cm-3", "team-a/cm-4"]  # ...are not in the rest of this list
    assert rest["items"][0]["data"] == {"k": "v"}
    _, now = get(kube_client, f"/api/v1/namespaces/{NS}/configmaps")
    assert names(now) == ["team-a/cm-0", "team-a/cm-1", "team-a/cm-2", "team-a/cm-4", "team-a/cm-5"]


def test_a_continue_token_older_than_the_compacted_history_is_410_expired(maps, kube_client):
    _, first = get(kube_client, "/api/v1/configmaps", limit=2)
    maps.put(config_map("cm-9"))
    maps.compact()

    code, status = get(kube_client, "/api/v1/configmaps", limit=2, **{"continue": first["metadata"]["continue"]})

    assert (code, status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old")
    start, revision = paging.decode_continue(status["metadata"]["continue"])  # the inconsistent continuation
    assert (start, revision) == ("team-a/cm-1\x00", paging.LATEST)
    _, rest = get(kube_client, "/api/v1/configmaps", **{"continue": status["metadata"]["continue"]})
    assert "team-a/cm-9" in names(rest)


def test_a_continue_token_that_does_not_decode_is_a_bad_request(maps, kube_client):
    code, status = get(kube_client, "/api/v1/configmaps", limit=2, **{"continue": "not-a-token"})
    assert code == 400 and "continue key is not valid" in status["message"]


def test_a_watch_from_a_compacted_resource_version_gets_410_expired(maps, kube_client):
    _, listed = get(kube_client, f"/api/v1/namespaces/{NS}/configmaps")
    old = listed["metadata"]["resourceVersion"]
    maps.put(config_map("cm-7"))
    compacted = maps.compact()
    core = client.CoreV1Api(kube_client.api_client)

    with pytest.raises(ApiException) as failed:
        list(watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=old, timeout_seconds=1))
    assert failed.value.status == 410 and f"too old resource version: {old} ({compacted})" in failed.value.reason

    events = list(watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=str(compacted),
                                       timeout_seconds=1))
    assert events == []  # from the compacted revision itself the history is whole

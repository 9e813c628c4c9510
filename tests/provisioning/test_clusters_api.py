"""`GET /api/v1/clusters/[{id}/]` after discovery: pools with what was discovered and the discrepancies, nodes, free
and used GPUs by strategy, the last sync; never credentials; a constant number of queries for the list. And
`POST /api/v1/clusters/{id}/sync/` for the platform team."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provisioning.inventory import cluster_declare
from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, Node
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401
from tests.support.celery_worker import eager

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced_east(east_live):
    assert inventory_sync(cluster=east_live).status == "synced"
    return Cluster.objects.get(pk=east_live.pk)


def test_the_cluster_detail_shows_pools_nodes_capacity_and_discrepancies(api, engineer, synced_east):
    body = api(engineer).get(f"/api/v1/clusters/{synced_east.pk}/").json()

    assert (body["discovered_kubernetes_version"], body["dra_in_use"], body["node_count"]) == ("v1.35.2", True, 10)
    assert [g["backend"] for g in body["discovered_gang_schedulers"]] == ["native", "volcano"]
    assert body["last_synced_at"] and body["last_sync_error"] == ""
    assert body["capacity"]["whole_gpu"]["devices_free"] == 20
    assert body["capacity"]["mig"]["profiles"]["1g.18gb"] == {"total": 32, "used": 1, "free": 31}
    pools = {p["name"]: p for p in body["pools"]}
    assert pools["a100-mig-small"]["discrepancies"][0]["field"] == "node_count"
    assert pools["b200-180gb-dra"]["source"] == "discovered"
    assert pools["h100-train"]["capacity"]["whole_gpu"] == {
        "devices_total": 32, "devices_used": 18, "devices_free": 14, "equivalents_total": 32.0,
        "equivalents_used": 18.0, "equivalents_free": 14.0}
    assert pools["h100-train"]["discovered"]["cliques"] == ["7b968a6d-0c2e-4b1a-9c51-2f0e8d1b7e11.1"]
    nodes = {n["name"]: n for n in body["nodes"]}
    assert nodes["gpu-h100-3"]["gpu_free"] == {"nvidia.com/gpu": 6} and nodes["gpu-h100-3"]["gpu_pod_count"] == 1
    assert nodes["gpu-b200-1"]["scheduling_model"] == "dra" and nodes["gpu-h200-1"]["pool"] == "h200-mig"
    assert "gpu_pods" not in nodes["gpu-h100-1"]  # which team's pods run where is not for everyone


def test_the_list_has_pools_and_capacity_but_no_nodes_and_never_credentials(api, finance_user, synced_east):
    response = api(finance_user).get("/api/v1/clusters/")
    text = response.content.decode()

    assert response.status_code == 200
    east = next(c for c in response.json()["results"] if c["name"] == "gpu-east")
    assert "nodes" not in east and east["capacity"]["time_slicing"]["devices_total"] == 32
    assert "test-token" not in text and "credential" not in text and "token" not in json.dumps(east)


def test_list_and_detail_take_a_constant_number_of_queries(api, engineer, synced_east):
    client = api(engineer)
    client.get("/api/v1/clusters/")  # warm-up (authentication caches)

    def count(url):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    detail = f"/api/v1/clusters/{synced_east.pk}/"
    before = count("/api/v1/clusters/"), count(detail)
    for i in range(3):  # more clusters, pools and nodes
        cluster = cluster_declare(name=f"extra-{i}", pools=[
            {"name": "p", "gpu_model": "H100-80GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "exclusive"}])
        for node in Node.objects.filter(cluster=synced_east)[:3]:
            node.pk, node.cluster, node.pool = None, cluster, cluster.pools.get()
            node.save()
    for node in Node.objects.filter(cluster=synced_east)[:3]:
        node.pk, node.name = None, f"{node.name}-twin"
        node.save()

    assert (count("/api/v1/clusters/"), count(detail)) == before


def test_a_cluster_never_synced_says_so(api, engineer, inventory):
    west = api(engineer).get(f"/api/v1/clusters/{inventory[1].pk}/").json()
    assert (west["last_synced_at"], west["nodes"], west["capacity"], west["dra_in_use"]) == (None, [], {}, None)


def test_the_platform_team_starts_a_sync(api, platform_user, east_live, django_capture_on_commit_callbacks):
    with eager(), django_capture_on_commit_callbacks(execute=True):
        response = api(platform_user).post(f"/api/v1/clusters/{east_live.pk}/sync/", {}, format="json")

    assert response.status_code == 202
    assert response.json() == {"cluster": "gpu-east", "status": "queued",
                               "message": "Sync of gpu-east queued; GET the cluster to see the result."}
    assert Cluster.objects.get(pk=east_live.pk).last_synced_at is not None


def test_a_sync_of_a_gitops_cluster_says_why_it_will_be_skipped(api, platform_user, inventory):
    response = api(platform_user).post(f"/api/v1/clusters/{inventory[1].pk}/sync/", {}, format="json")
    assert response.status_code == 202 and response.json()["message"].startswith("No API server: gpu-west")


def test_only_the_platform_team_starts_a_sync(api, engineer, finance_user, inventory):
    url = f"/api/v1/clusters/{inventory[0].pk}/sync/"
    assert api().post(url, {}, format="json").status_code == 401
    for user in (engineer, finance_user):
        response = api(user).post(url, {}, format="json")
        assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert api(engineer).get(f"/api/v1/clusters/{inventory[0].pk}/").status_code == 200
    assert api(engineer).post("/api/v1/clusters/999999/sync/", {}, format="json").status_code == 403
    assert api(engineer).get("/api/v1/clusters/999999/").status_code == 404
    assert api().get(f"/api/v1/clusters/{inventory[0].pk}/").status_code == 401


def test_the_admin_shows_discovered_facts_and_syncs(synced_east, platform_user, eager_celery,
                                                    django_capture_on_commit_callbacks):
    from django.test import Client

    client = Client()
    client.force_login(platform_user)
    page = client.get(f"/admin/provisioning/cluster/{synced_east.pk}/change/").content.decode()
    assert "v1.35.2" in page and "volcano (v1beta1)" in page
    assert "GPU ResourceSlices exist although the cluster is declared device plugin." in page
    pools = client.get("/admin/provisioning/nodepool/").content.decode()
    assert "a100-mig-small" in pools and "driver upgrade impact" in pools
    nodes = client.get("/admin/provisioning/node/").content.decode()
    assert "gpu-h200-2" in nodes

    before = synced_east.last_synced_at
    # The sync runs on a worker (the web pods hold no Kubernetes credentials): queued, then done.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/admin/provisioning/cluster/", {"action": "sync_inventory",
                                                                "_selected_action": [synced_east.pk]}, follow=True)
    assert "Sync of gpu-east queued" in response.content.decode()
    synced_east.refresh_from_db()
    assert synced_east.last_synced_at > before and synced_east.last_sync_error == ""

"""Inventory at fleet size, over HTTPS against the fake API server: a sync of a fleet of GPU nodes (whole-GPU, MIG,
DRA with a ResourceSlice each, time-sliced, MPS; pods and allocated claims holding some GPUs) costs the same
database queries for 20 nodes as for 80, and so do the capacity figures read from what it recorded, through the
selector and the clusters API."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from provisioning.demo import CLUSTERS
from provisioning.inventory import cluster_declare
from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, Node
from provisioning.selectors import capacity_of, cluster_detail_list
from kubesim import fleet
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def registered(start_fake_kube, name: str, nodes: int) -> Cluster:
    fake = start_fake_kube()
    fleet.seed(fake, nodes)
    cluster_declare(**{**dict(CLUSTERS[0]), "name": name})
    call_command("register_cluster", name, "--server", fake.url, "--token", "test-token", "--ca-cert-file",
                 fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
    return Cluster.objects.get(name=name)


def queries(func) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        result = func()
    return len(captured), result


def test_a_sync_and_the_capacity_figures_cost_the_same_queries_for_20_nodes_as_for_80(
    inventory, start_fake_kube, platform_user
):
    small, large = registered(start_fake_kube, "fleet-small", 20), registered(start_fake_kube, "fleet-large", 80)

    small_sync, small_outcome = queries(lambda: inventory_sync(cluster=small))
    large_sync, large_outcome = queries(lambda: inventory_sync(cluster=large))

    assert (small_outcome.status, large_outcome.status) == ("synced", "synced")
    assert (small_outcome.nodes, large_outcome.nodes) == (20, 80)
    assert small_sync == large_sync
    b200 = Node.objects.filter(cluster=large, name__startswith="fleet-b200-")
    assert b200.count() == 8 and all(n.dra_devices for n in b200)  # read from their ResourceSlices

    def figures(cluster):
        return lambda: {c.name: capacity_of(c.nodes.all()) for c in cluster_detail_list().filter(pk=cluster.pk)}

    small_read, small_figures = queries(figures(small))
    large_read, large_figures = queries(figures(large))
    assert small_read == large_read
    whole = large_figures["fleet-large"]["whole_gpu"]
    # 56 H100 and 8 B200 (DRA) nodes of 8; an 8-GPU pod on every other H100, a 2-GPU claim on every other B200.
    assert (whole["devices_total"], whole["devices_used"]) == (64 * 8, 28 * 8 + 4 * 2)
    assert small_figures["fleet-small"]["whole_gpu"]["devices_total"] == 16 * 8

    api = client_for(platform_user)
    small_api, _ = queries(lambda: api.get("/api/v1/clusters/", {"name": "fleet-small"}))
    large_api, answer = queries(lambda: api.get("/api/v1/clusters/", {"name": "fleet-large"}))
    assert answer.status_code == 200 and small_api == large_api

"""A discovered pool whose labels contradict what the renderer pins is flagged at inventory sync and offered to
nobody, instead of an engineer's preview failing with a 400. Given nodes served by the fake API server over HTTP
(MIG `single` slices time-sliced without rename, so GFD writes `-SHARED` after the MIG product; a layout GFD
reports as `-MIG-INVALID`), when the inventory is synced and an engineer previews MIG inference, then the pool
carries a `rendering` discrepancy and the preview places the request elsewhere."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.decisions import Decision
from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, NodePool
from kubesim import nodes as k
from tests.provisioning.live_fixtures import live_fake  # noqa: F401

pytestmark = pytest.mark.django_db

SINGLE = {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config.state": "success"}


def shared_single_node(name: str) -> dict:
    """8 x H200 under MIG `single` all-1g.18gb whose 56 slices are time-sliced 4 ways, not renamed."""
    labels = SINGLE | {"nvidia.com/mig.config": "all-1g.18gb", "nvidia.com/gpu.product": "NVIDIA-H200-MIG-1g.18gb-SHARED",
                       "nvidia.com/gpu.count": "56", "nvidia.com/gpu.replicas": "4",
                       "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    return k.gpu_node(name, model="H200-141GB", extra_labels=labels, gpu_resources={"nvidia.com/gpu": 224}, taints=[])


def invalid_node(name: str) -> dict:
    """8 x H200 under `single` with a mixed layout: GFD reports MIG-INVALID and no devices."""
    labels = SINGLE | {"nvidia.com/mig.config": "all-balanced", "nvidia.com/gpu.product": "NVIDIA-H200-MIG-INVALID",
                       "nvidia.com/gpu.count": "0", "nvidia.com/gpu.replicas": "0"}
    return k.gpu_node(name, model="H200-141GB", extra_labels=labels, gpu_resources={"nvidia.com/gpu": 0}, taints=[])


@pytest.fixture
def east(inventory, live_fake):
    call_command("register_cluster", "gpu-east", "--server", live_fake.url, "--token", "test-token", "--ca-cert-file", live_fake.ca_file,
                 "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
    live_fake.put(k.namespace("gpu-team-a"))
    return Cluster.objects.get(name="gpu-east")


def synced(cluster):
    outcome = inventory_sync(cluster=cluster)
    assert outcome.status == "synced", outcome.message


def test_time_sliced_single_slices_are_flagged_and_the_preview_goes_elsewhere(api, engineer, team_a, east, live_fake,
                                                                             valid_answers):
    live_fake.put(shared_single_node("gpu-h200-1"))
    synced(east)

    pool = NodePool.objects.get(cluster=east, source="discovered")
    (found,) = [d for d in pool.discrepancies if d["field"] == "rendering"]
    assert "1g.18gb slices cannot be rendered" in found["message"]
    assert "NVIDIA-H200-MIG-1g.18gb-SHARED" in found["message"]
    assert pool.discovered["usable_node_count"] == 0

    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": valid_answers},
                                  format="json")
    assert response.status_code == 200, response.json()
    assert Decision.from_json(response.json()["decision"]).node_pool != pool.name


def test_a_mig_invalid_node_is_flagged(east, live_fake):
    live_fake.put(invalid_node("gpu-h200-2"))
    synced(east)

    pool = NodePool.objects.get(cluster=east, source="discovered")
    (found,) = [d for d in pool.discrepancies if d["field"] == "rendering"]
    assert "nvidia.com/gpu.product" in found["message"] and "NVIDIA-H200-MIG-INVALID" in found["message"]


def test_pools_the_renderer_can_place_on_are_not_flagged(east, live_fake):
    live_fake.put(k.h200_mig_node("gpu-h200-3", pool=None))
    live_fake.put(k.l40s_shared_node("gpu-l40s-9", pool=None))
    live_fake.put(k.mps_node("gpu-mps-9", renamed=False))
    synced(east)

    pools = NodePool.objects.filter(cluster=east, source="discovered")
    assert pools.count() == 3
    assert [d for p in pools for d in p.discrepancies if d["field"] == "rendering"] == []

"""Inventory discovery end to end over HTTP: given gpu-east declared as in the demo and a fake API server seeded with
a realistic fleet (H100 with a clique, H200 and A100 under MIG mixed, L40S time-sliced, a B200 on DRA, a CPU node)
and pods holding GPUs, when the inventory is synced, then nodes, pools, free and used GPUs, gang schedulers, the
version and the discrepancies are recorded, declared values are untouched, and a second sync changes nothing."""
from __future__ import annotations

from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, Node, NodePool
from provisioning.selectors import capacity_of
from kubesim import nodes as k
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401
from tests.support.celery_worker import eager

pytestmark = pytest.mark.django_db


def synced(cluster):
    outcome = inventory_sync(cluster=cluster)
    assert outcome.status == "synced", outcome.message
    return Cluster.objects.get(pk=cluster.pk)


def test_discovery_records_version_gang_schedulers_and_dra(east_live):
    cluster = synced(east_live)

    assert cluster.discovered_kubernetes_version == "v1.35.2"
    assert cluster.discovered_gang_schedulers == [
        {"backend": "native", "api_group": "scheduling.k8s.io", "versions": ["v1alpha1"]},
        {"backend": "volcano", "api_group": "scheduling.volcano.sh", "versions": ["v1beta1"]},
    ]
    assert cluster.dra_in_use is True and cluster.last_sync_error == "" and cluster.last_synced_at
    assert [d["field"] for d in cluster.discrepancies] == ["scheduling_model"]  # slices on a device-plugin cluster


def test_nodes_are_recorded_with_their_facts_and_who_holds_their_gpus(east_live):
    synced(east_live)

    nodes = {n.name: n for n in Node.objects.filter(cluster=east_live)}
    assert "cpu-1" not in nodes and len(nodes) == 10
    h100 = nodes["gpu-h100-1"]
    assert (h100.pool.name, h100.gpu_model.key, h100.gpu_count, h100.driver_version, h100.clique) == (
        "h100-train", "H100-80GB", 8, "570.124.06", k.H100_CLIQUE)
    assert h100.gpu_used == {"nvidia.com/gpu": 8} and h100.gpu_pods[0]["request_id"] == 901
    assert h100.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"  # raw maps are kept
    assert h100.allocatable["nvidia.com/gpu"] == "8" and h100.taints[0]["key"] == "nvidia.com/gpu"
    assert nodes["gpu-h100-4"].gpu_used == {}  # its only pod has Succeeded
    h200 = nodes["gpu-h200-1"]
    assert h200.mig_devices == {"1g.18gb": 16, "2g.35gb": 8, "3g.71gb": 8}
    assert h200.gpu_used == {"nvidia.com/mig-1g.18gb": 1, "nvidia.com/mig-3g.71gb": 1}
    b200 = nodes["gpu-b200-1"]
    assert (b200.scheduling_model, b200.gpu_resources, b200.gpu_used) == (
        "dra", {"gpu.nvidia.com/gpu": 8}, {"gpu.nvidia.com/gpu": 2})
    assert b200.dra_devices[0]["product_name"] == "NVIDIA B200"


def test_declared_pools_get_discovered_facts_and_discrepancies_but_keep_their_values(east_live):
    synced(east_live)

    a100 = NodePool.objects.get(cluster=east_live, name="a100-mig-small")
    assert (a100.node_count, a100.mig_layout, a100.driver_version) == (2, "all-1g.10gb", "550.90.07")  # declared
    assert a100.discrepancies == [{"field": "node_count", "declared": 2, "discovered": 1,
                                   "message": "a100-mig-small declares 2 nodes; 1 match its node selector."}]
    assert a100.discovered["mig_profiles"] == {"1g.10gb": 7} and a100.last_seen_at
    for name in ("h100-train", "h200-mig", "l40s-shared"):
        assert NodePool.objects.get(cluster=east_live, name=name).discrepancies == []


def test_nodes_no_declared_pool_selects_form_discovered_pools(east_live):
    synced(east_live)

    pool = NodePool.objects.get(cluster=east_live, source="discovered")
    assert (pool.name, pool.gpu_model.key, pool.sharing_mode, pool.scheduling_model) == (
        "b200-180gb-dra", "B200-180GB", "exclusive", "dra")
    assert pool.node_selector == {"nvidia.com/gpu.product": "NVIDIA-B200"}
    assert (pool.node_count, pool.gpus_per_node, pool.driver_version) == (1, 8, "580.65.06")
    assert pool.nvlink_domain == k.B200_CLIQUE and pool.discovery_key


def test_free_and_used_gpus_by_strategy(east_live):
    synced(east_live)

    capacity = capacity_of(Node.objects.filter(cluster=east_live, present=True).select_related("gpu_model"))
    assert capacity["whole_gpu"] == {"devices_total": 40, "devices_used": 20, "devices_free": 20,
                                     "equivalents_total": 40.0, "equivalents_used": 20.0,
                                     "equivalents_free": 20.0}  # 4 x H100 and the B200 (2 on DRA)
    assert capacity["mig"]["profiles"]["3g.71gb"] == {"total": 16, "used": 1, "free": 15}
    assert capacity["time_slicing"]["devices_used"] == 1 and capacity["time_slicing"]["equivalents_total"] == 8.0


def test_a_second_sync_changes_nothing(east_live):
    synced(east_live)
    before = {n.name: (n.pk, n.pool_id, n.gpu_used, n.first_seen_at) for n in Node.objects.all()}
    pools_before = {p.name: (p.pk, p.discovered, p.discrepancies) for p in NodePool.objects.all()}

    synced(east_live)

    assert {n.name: (n.pk, n.pool_id, n.gpu_used, n.first_seen_at) for n in Node.objects.all()} == before
    assert {p.name: (p.pk, p.discovered, p.discrepancies) for p in NodePool.objects.all()} == pools_before


def test_changes_in_the_cluster_are_followed(east_live, live_fake):
    synced(east_live)
    live_fake.remove("v1", "Node", "gpu-l40s-2")
    live_fake.put(k.h200_mig_node("gpu-h200-2", layout="all-1g.18gb"))
    live_fake.patch_status("v1", "Pod", "train-1", "gpu-team-a", {"phase": "Succeeded"})
    live_fake.remove("v1", "Node", "gpu-b200-1")
    live_fake.patch("v1", "Node", "gpu-h100-3", None, {"spec": {"unschedulable": True}})

    synced(east_live)

    gone = Node.objects.get(name="gpu-l40s-2")
    assert (gone.present, gone.gone_at is not None) == (False, True)
    assert Node.objects.get(name="gpu-h100-2").gpu_used == {}
    assert Node.objects.get(name="gpu-h100-3").unschedulable
    h200 = NodePool.objects.get(name="h200-mig")
    assert h200.mig_layout == "all-balanced"  # declared, untouched
    assert [d["field"] for d in h200.discrepancies] == ["mig_layout"]
    assert h200.discovered["mig_profiles"] == {"1g.18gb": 7, "2g.35gb": 1, "3g.71gb": 1}
    assert NodePool.objects.get(name="l40s-shared").discrepancies[0]["field"] == "node_count"
    assert not NodePool.objects.filter(source="discovered").exists()  # the B200 pool went with its node


def test_a_discovered_pool_a_live_request_was_placed_on_is_kept_when_its_nodes_go(east_live, live_fake):
    from intake.models import GpuRequest

    synced(east_live)
    GpuRequest.objects.create(team=_team(), name="dra-job", answers={}, decision={"cluster": "gpu-east",
                              "node_pool": "b200-180gb-dra"}, policy_version=_policy(), workload_class="training",
                              strategy="whole_gpu", requested_by=_user(), status="running")
    live_fake.remove("v1", "Node", "gpu-b200-1")

    synced(east_live)

    pool = NodePool.objects.get(name="b200-180gb-dra")
    assert pool.node_count == 0 and pool.discrepancies[0]["message"].startswith("No node of b200-180gb-dra is left")


def test_a_node_with_both_device_plugin_and_dra_is_flagged_on_its_pool(east_live, live_fake):
    conflict = k.h100_node("gpu-h100-4")
    live_fake.put(conflict)
    live_fake.put(k.resource_slice("gpu-h100-4", model="H100-80GB", driver="570.124.06"))

    synced(east_live)

    pool = NodePool.objects.get(name="h100-train")
    found = {d["field"]: d for d in pool.discrepancies}
    assert found["scheduling_model"]["discovered"] == ["both", "device_plugin"]
    assert "gpu-h100-4 both the device plugin" in found["scheduling_model"]["message"]
    assert not Node.objects.get(name="gpu-h100-4").usable
    assert pool.discovered["usable_node_count"] == 3


def test_a_failed_sync_is_recorded_and_keeps_what_was_known(east_live, live_fake):
    synced(east_live)
    live_fake.fail_next("GET", r"^/api/v1/nodes$", 503, message="etcdserver: request timed out")

    outcome = inventory_sync(cluster=east_live)

    cluster = Cluster.objects.get(pk=east_live.pk)
    assert outcome.status == "failed" and outcome.transient
    assert "list nodes: etcdserver: request timed out" in cluster.last_sync_error
    assert cluster.last_synced_at < cluster.last_sync_attempt_at
    assert Node.objects.filter(cluster=cluster, present=True).count() == 10


def test_a_gitops_cluster_is_skipped_with_a_note(inventory):
    west = Cluster.objects.get(name="gpu-west")

    outcome = inventory_sync(cluster=west)

    west.refresh_from_db()
    assert outcome.status == "skipped"
    assert west.last_sync_error.startswith("No API server: gpu-west is provisioned through GitOps")
    assert west.last_synced_at is None and not west.nodes.exists()


def test_sync_inventory_command(east_live):
    out = StringIO()
    call_command("sync_inventory", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("gpu-east: synced. 10 GPU nodes in 5 pools")
    assert lines[1].startswith("gpu-west: skipped. No API server")

    out = StringIO()
    call_command("sync_inventory", "--cluster", "gpu-east", stdout=out)
    assert out.getvalue().count("\n") == 1
    with pytest.raises(CommandError, match="no cluster named 'nope'"):
        call_command("sync_inventory", "--cluster", "nope")


def test_sync_inventory_command_fails_when_a_sync_fails(east_live, live_fake):
    live_fake.fail_next("GET", r"^/version", 401, message="Unauthorized", times=5)
    with pytest.raises(CommandError, match="inventory sync failed for: gpu-east"):
        call_command("sync_inventory", "--cluster", "gpu-east", stdout=StringIO())


def test_beat_runs_one_named_task_per_cluster(east_live):
    from provisioning import tasks

    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"provisioning.inventory_sync_all", "provisioning.mig_plans_advance"} <= schedule
    assert tasks.inventory_sync.name == "provisioning.inventory_sync"
    with eager():
        assert tasks.inventory_sync_all.apply().get() == 2
    assert Cluster.objects.get(name="gpu-east").last_synced_at is not None
    assert Cluster.objects.get(name="gpu-west").last_sync_error.startswith("No API server")
    assert tasks.inventory_sync.apply(args=[999999]).get() == "gone"


def _team():
    from tests.factories import TeamFactory

    return TeamFactory(slug="team-x")


def _user():
    from tests.factories import make_user

    return make_user("xavier", "engineer")


def _policy():
    from intake.models import PolicyVersion

    return PolicyVersion.objects.get(status="active")


def test_a_discovered_pool_keeps_its_row_when_its_grouping_key_changes_but_not_its_name(east_live, live_fake):
    live_fake.put(k.b200_dra_node("gpu-b200-1", pool="b200-180gb-dra"))  # grouped by the portal's label
    synced(east_live)
    before = NodePool.objects.get(name="b200-180gb-dra")
    assert before.discovery_key == "label:b200-180gb-dra"

    live_fake.put(k.b200_dra_node("gpu-b200-1", pool=None))  # now grouped by model and mode: same name
    synced(east_live)

    after = NodePool.objects.get(name="b200-180gb-dra")
    assert after.pk == before.pk and after.discovery_key == "B200-180GB|exclusive||dra"
    assert Node.objects.get(name="gpu-b200-1").pool_id == after.pk

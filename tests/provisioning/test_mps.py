"""MPS is its own sharing mode, end to end. Given a cluster whose H100 nodes GFD labels
`nvidia.com/gpu.sharing-strategy=mps` (served by the fake API server over HTTP) and a policy that routes
development to MPS, when the inventory is synced and an engineer previews a notebook, then the nodes are an MPS
pool (not time-slicing), the decision is an MPS share with its per-client memory limit, the pod asks for one
share on nodes labelled `mps`, and metering prices the share as 1/replicas of a GPU."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.decisions import Decision
from intake.models import Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create
from provisioning.inventory_sync import inventory_sync
from provisioning.models import AppliedObject, Cluster, Node, NodePool
from provisioning.selectors import capacity_of
from kubesim import nodes as k
from tests.provisioning.live_fixtures import live_fake  # noqa: F401

pytestmark = pytest.mark.django_db

NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "latency_sensitive",
            "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


@pytest.fixture
def mps_cluster(inventory, live_fake):
    """gpu-east against the fake, with two H100 nodes shared through MPS four ways (renameByDefault)."""
    call_command("register_cluster", "gpu-east", "--server", live_fake.url, "--token", "test-token", "--ca-cert-file", live_fake.ca_file,
                 "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
    live_fake.put(k.namespace("gpu-team-a"))
    for i in (1, 2):
        live_fake.put(k.mps_node(f"gpu-mps-{i}", replicas=4))
    cluster = Cluster.objects.get(name="gpu-east")
    outcome = inventory_sync(cluster=cluster)
    assert outcome.status == "synced", outcome.message
    return cluster


@pytest.fixture
def mps_policy(api, platform_user):
    """Policy version 2: development on standard data goes to MPS, signed off through the API."""
    draft = policy_version_draft_create(user=platform_user, notes="notebooks on MPS")
    Rule.objects.filter(version=draft, key="development-standard").update(
        outcome={"strategy": "mps", "auto_approve": True},
        rationale="notebooks get an MPS share: memory is capped per client, so a neighbour cannot take it all.")
    digest = policy_version_diff(version=draft).digest
    response = api(platform_user).post(f"/api/v1/policy/versions/{draft.number}/sign-off/", {"digest": digest},
                                       format="json")
    assert response.status_code == 200, response.json()
    return draft


def test_mps_nodes_are_discovered_as_an_mps_pool_not_as_time_slicing(mps_cluster):
    node = Node.objects.get(name="gpu-mps-1")
    assert (node.sharing_mode, node.gpu_replicas, node.gpu_count) == ("mps", 4, 8)
    pool = NodePool.objects.get(cluster=mps_cluster, source="discovered")
    assert (pool.name, pool.sharing_mode, pool.time_slicing_replicas, pool.time_slicing_renamed) == (
        "h100-80gb-mps4", "mps", 4, True)
    assert pool.discovered["usable_node_count"] == 2 and pool.discrepancies == []
    capacity = capacity_of(Node.objects.filter(cluster=mps_cluster, present=True).select_related("gpu_model"))
    assert set(capacity) == {"mps"}
    assert (capacity["mps"]["devices_total"], capacity["mps"]["equivalents_total"]) == (64, 16.0)


def test_a_declared_time_sliced_pool_on_mps_nodes_is_a_discrepancy(live_fake, inventory):
    call_command("register_cluster", "gpu-east", "--server", live_fake.url, "--token", "test-token", "--ca-cert-file", live_fake.ca_file,
                 "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
    live_fake.put(k.mps_node("gpu-l40s-1", model="L40S-48GB", gpus=4, pool="l40s-shared"))

    assert inventory_sync(cluster=Cluster.objects.get(name="gpu-east")).status == "synced"

    pool = NodePool.objects.get(name="l40s-shared")  # declared time-slicing x4, device-plugin config ts-4
    found = {d["field"]: d for d in pool.discrepancies}
    assert found["sharing_mode"]["discovered"] == ["mps"]
    assert pool.discovered["usable_node_count"] == 0  # nothing is placed on nodes of another mode


def test_the_policy_routes_to_mps_and_preview_renders_an_mps_pod(api, engineer, team_a, mps_cluster, mps_policy):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": NOTEBOOK}, format="json")

    assert response.status_code == 200, response.json()
    decision = Decision.from_json(response.json()["decision"])
    assert (decision.strategy, decision.cluster, decision.node_pool) == ("mps", "gpu-east", "h100-80gb-mps4")
    assert (decision.memory_isolation, decision.memory_limit_gb) == ("limited", 20.0)  # 80 GB / 4 clients
    assert decision.gpu_equivalents == 0.25
    assert "memory is capped at 20 GB per client by MPS" in decision.summary
    assert "not isolated" not in decision.summary
    (deployment,) = [o for o in response.json()["manifests"] if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    assert pod["spec"]["nodeSelector"]["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert pod["spec"]["nodeSelector"]["nvidia.com/device-plugin.config"] == "mps-4"
    assert pod["metadata"]["annotations"]["gpu-portal.io/gpu-equivalents"] == "0.250000"


def test_mps_does_not_take_a_request_above_its_per_client_memory_limit(api, engineer, team_a, mps_cluster,
                                                                       mps_policy):
    # 30 GB does not fit a 20 GB MPS client: the route's platform fallback (a whole GPU) applies instead.
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": {**NOTEBOOK,
                                  "gpu_memory_gb": 30}}, format="json")

    assert response.status_code == 200, response.json()
    assert Decision.from_json(response.json()["decision"]).strategy == "whole_gpu"


def test_a_rule_may_name_mps_and_still_not_an_unknown_strategy(api, platform_user):
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="development-standard").update(outcome={"strategy": "mps-ish"})
    response = api(platform_user).post(f"/api/v1/policy/versions/{draft.number}/sign-off/",
                                       {"digest": policy_version_diff(version=draft).digest}, format="json")
    assert response.status_code == 400
    assert "mps" in str(response.json())  # the message lists the strategies a rule may name


def test_metering_prices_an_mps_pod_as_a_share_of_the_pool(mps_cluster, engineer, team_a, mps_policy, live_fake):
    from chargeback.models import UsageInterval
    from chargeback.services import usage_collect
    from workflows.services import request_submit

    from provisioning.inventory import team_quota_set

    team_quota_set(team=team_a, strategy="mps", gpu_equivalents=1)  # the rule approves only with a quota
    request = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=NOTEBOOK)
    assert request.decision.strategy == "mps" and request.status == "approved"
    pod = k.gpu_pod("notebook-0", node="gpu-mps-1", resources={"nvidia.com/gpu.shared": 1}, request_id=request.pk)
    pod["metadata"]["labels"] |= {"gpu-portal.io/strategy": "mps", "gpu-portal.io/cluster": "gpu-east"}
    pod["metadata"]["annotations"] = {"gpu-portal.io/gpu-equivalents": "0.250000", "gpu-portal.io/gpu-model": "H100-80GB",
                                      "gpu-portal.io/devices": "1"}
    # Its Deployment is one the portal applied (metering bills a pod through its owner, docs/chargeback.md).
    deployment = AppliedObject.objects.create(
        request=request, cluster=Cluster.objects.get(name="gpu-east"), api_version="apps/v1", kind="Deployment",
        namespace=pod["metadata"]["namespace"], name="notebook", uid="deployment-uid-1", applied_at=request.created_at)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment.name,
                                           "uid": deployment.uid, "controller": True}]
    live_fake.put(pod)

    usage_collect(cluster_name="gpu-east")

    interval = UsageInterval.objects.get(pod_name="notebook-0")
    assert (interval.strategy, interval.equivalents_num, interval.equivalents_den, interval.flags) == ("mps", 1, 4, [])


def test_the_api_says_which_device_plugin_config_each_pool_needs(api, platform_user, mps_cluster):
    clusters = api(platform_user).get("/api/v1/clusters/").json()
    east = next(c for c in clusters.get("results", clusters) if c["name"] == "gpu-east")
    pools = {p["name"]: p for p in east["pools"]}

    mps = pools["h100-80gb-mps4"]
    assert mps["device_plugin_config"] == "mps-4"
    assert mps["device_plugin_sharing_config"] == {
        "version": "v1", "flags": {"migStrategy": "none"},
        "sharing": {"mps": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}
    ts = pools["l40s-shared"]["device_plugin_sharing_config"]["sharing"]
    assert ts == {"timeSlicing": {"renameByDefault": True, "failRequestsGreaterThanOne": False,
                                  "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}
    assert pools["h200-mig"]["device_plugin_sharing_config"] == {"version": "v1", "flags": {"migStrategy": "mixed"}}
    west = next(c for c in clusters.get("results", clusters) if c["name"] == "gpu-west")
    assert west["pools"][0]["device_plugin_sharing_config"] is None  # DRA: no device plugin


def test_more_than_one_gpu_per_replica_is_not_placed_on_a_device_plugin_mps_pool(api, engineer, team_a, mps_cluster,
                                                                                mps_policy):
    # One MPS share per replica (failRequestsGreaterThanOne); the rule states no fallback, so the answer changes.
    answers = {**NOTEBOOK, "gpus_per_replica": 2, "gpu_memory_gb": 20}
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": answers}, format="json")

    assert response.status_code == 400
    assert "only one MPS" in response.json()["answers"]["gpus_per_replica"][0]
"""MIG readiness is a per-pool fact: only mig-manager writes `nvidia.com/mig.config.state` (mig-parted v0.15.0
`deployments/container/reconfigure-mig.sh`), so statically or cloud-configured MIG nodes never carry it.

Given gpu-east registered against the fake API server over HTTPS with its H200 MIG nodes, when the inventory is
synced and an engineer previews MIG inference, then the pods require `nvidia.com/mig.config.state=success` only
where every node of the pool carries the label (or the platform team declared mig-manager), the decision's reasons
say which applies, and the objects schedule on the nodes the fake serves."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.decisions import Decision
from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, NodePool
from kubesim import nodes as k
from tests.provisioning.live_fixtures import live_fake  # noqa: F401
from tests.support.semantic import Admitted, Inventory, assert_schedulable

pytestmark = pytest.mark.django_db

SERVE = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
         "gpu_memory_gb": 10, "image": "vllm/vllm-openai:v0.9.0", "replicas": 1}
STATE = "nvidia.com/mig.config.state"


def static_mig_node(name: str) -> dict:
    """An H200 MIG node whose layout was set outside mig-manager (a cloud image, nvidia-smi at boot): no state label."""
    node = k.h200_mig_node(name)
    node["metadata"]["labels"].pop(STATE)
    return node


@pytest.fixture
def east(inventory, live_fake):
    call_command("register_cluster", "gpu-east", "--server", live_fake.url, "--token", "test-token", "--ca-cert-file",
                 live_fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
    live_fake.put(k.namespace("gpu-team-a"))
    # The demo declares mig-manager on h200-mig; here nothing is declared, so discovery decides.
    NodePool.objects.filter(cluster__name="gpu-east", name="h200-mig").update(mig_readiness_label=None)
    return Cluster.objects.get(name="gpu-east")


def _preview_mig(api, engineer, live_fake, nodes):
    for node in nodes:
        live_fake.put(node)
    outcome = inventory_sync(cluster=Cluster.objects.get(name="gpu-east"))
    assert outcome.status == "synced", outcome.message
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "name": "serve", "answers": SERVE},
                                  format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    decision = Decision.from_json(body["decision"])
    assert (decision.node_pool, decision.strategy) == ("h200-mig", "mig")
    pod = next(m for m in body["manifests"] if m["kind"] == "Deployment")["spec"]["template"]["spec"]
    terms = pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {})
    keys = [e["key"] for term in terms.get("nodeSelectorTerms", []) for e in term["matchExpressions"]]
    reason = next(r.text for r in decision.reasons if r.field == "mig_readiness")
    # Schedulable on the nodes the fake serves (Volcano owns the GPU nodes here).
    assert_schedulable(body["manifests"], Inventory(nodes=tuple(nodes), gpu_node_scheduler="volcano",
                                                    queues=frozenset(), cluster_queues=frozenset()),
                       Admitted(quota={}, team_gpus=0))
    return keys, reason


def test_static_mig_nodes_are_not_held_on_a_label_only_mig_manager_writes(api, engineer, team_a, east, live_fake):
    keys, reason = _preview_mig(api, engineer, live_fake, [static_mig_node("gpu-h200-1"), static_mig_node("gpu-h200-2")])

    assert NodePool.objects.get(cluster=east, name="h200-mig").discovered["mig_config_state_label"] is False
    assert STATE not in keys
    assert "is not managed by mig-manager" in reason


def test_pools_mig_manager_configures_wait_for_its_success_label(api, engineer, team_a, east, live_fake):
    keys, reason = _preview_mig(api, engineer, live_fake, [k.h200_mig_node("gpu-h200-1"), k.h200_mig_node("gpu-h200-2")])

    assert STATE in keys
    assert "mig-manager configures h200-mig's MIG layout" in reason


def test_the_platform_team_may_declare_it(api, engineer, team_a, east, live_fake):
    NodePool.objects.filter(cluster=east, name="h200-mig").update(mig_readiness_label=False)

    keys, reason = _preview_mig(api, engineer, live_fake, [k.h200_mig_node("gpu-h200-1"), k.h200_mig_node("gpu-h200-2")])

    assert STATE not in keys and "declared so" in reason

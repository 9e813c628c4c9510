"""Section 2, scheduling model per cluster and pool: given declared clusters, nodes recorded by discovery and
recorded decisions, the register says device plugin or DRA per node, flags pools that mix the two (or whose nodes
contradict the declaration or a sign-off) as conflicts, says whether the Kubernetes version offers
DRAExtendedResource, and previews what moving a device-plugin pool to DRA would change for its live requests."""
from __future__ import annotations

import pytest

from intake.models import GpuRequest
from portal.models import Team
from provisioning.inventory import team_quota_set
from provisioning.manifests import validate_objects
from provisioning.models import AppliedObject, Cluster, ProvisioningJob
from register.choices import DecisionArea
from register.sections import scheduling
from register.services import platform_decision_record, platform_decision_sign_off
from kubesim import nodes as k
from tests.register.conftest import INFERENCE, build_section, item, sync

pytestmark = pytest.mark.django_db


def h100_dra_node(name: str) -> dict:
    """An H100 node handed out by the NVIDIA DRA driver (no nvidia.com/gpu allocatable), in pool h100-train."""
    return k.gpu_node(name, model="H100-80GB", pool="h100-train", gpu_resources={},
                      extra_labels={"nvidia.com/gpu.clique": k.H100_CLIQUE,
                                    "nvidia.com/gpu.deploy.device-plugin": "false"})


def decide(user, cluster="gpu-east", model="device_plugin", *, pool=None, sign=True):
    cluster = Cluster.objects.get(name=cluster)
    decision = platform_decision_record(
        user=user, area=DecisionArea.SCHEDULING_MODEL, cluster=cluster,
        pool=cluster.pools.get(name=pool) if pool else None, value={"scheduling_model": model},
        owner="platform-team", rationale="the device plugin until 1.36")
    return platform_decision_sign_off(user=user, decision_id=decision.pk) if sign else decision


def test_never_synced_clusters_show_their_settings_as_inherited(inventory):
    section = build_section(scheduling)

    assert [(i["subject"], i["verdict"], i["state"]) for i in section["items"]] == [
        ("gpu-east", "inherited", "device plugin (cluster setting); never synced: no node seen"),
        ("gpu-east/a100-mig-small", "inherited", "device plugin (cluster setting); never synced: no node seen"),
        ("gpu-east/h100-train", "inherited", "device plugin (cluster setting); never synced: no node seen"),
        ("gpu-east/h200-mig", "inherited", "device plugin (cluster setting); never synced: no node seen"),
        ("gpu-east/l40s-shared", "inherited", "device plugin (cluster setting); never synced: no node seen"),
        ("gpu-west", "inherited", "DRA (cluster setting); never synced: no node seen"),
        ("gpu-west/b200-train", "inherited", "DRA (cluster setting); never synced: no node seen"),
    ]
    east = item(section, "gpu-east")
    assert east["notes"][:2] == ["Device plugin is the cluster's setting; nobody signed it off.",
                                 "Not verified against the nodes: gpu-east was never synced."]
    assert section["summary"]["pools_by_model"] == {"device_plugin": 4, "dra": 1}


@pytest.mark.parametrize("version, stage, on", [("1.34", "alpha", False), ("1.35", "alpha", False),
                                                ("1.36", "beta", True), ("1.37", "GA", True)])
def test_dra_extended_resource_by_kubernetes_version(inventory, version, stage, on):
    Cluster.objects.filter(name="gpu-east").update(kubernetes_version=version)
    gate = item(build_section(scheduling), "gpu-east")["evidence"]["dra_extended_resource"]
    assert (gate["kubernetes_version"], gate["stage"], gate["on_by_default"]) == (version, stage, on)
    assert gate["text"].startswith(f"Kubernetes {version}: DRAExtendedResource is {stage}")


def test_a_pool_whose_nodes_mix_the_device_plugin_and_dra_is_a_conflict(inventory):
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1"), h100_dra_node("gpu-h100-2")],
         slices=[k.resource_slice("gpu-h100-2", model="H100-80GB", driver="570.124.06")])

    section = build_section(scheduling)

    pool = item(section, "gpu-east/h100-train")
    assert pool["verdict"] == "conflict"
    assert pool["state"] == "device plugin (cluster setting); nodes: 1 device plugin, 1 DRA"
    assert pool["evidence"]["nodes_by_model"] == {"device_plugin": ["gpu-h100-1"], "dra": ["gpu-h100-2"]}
    assert pool["evidence"]["conflicts"] == [
        "The pool's nodes mix the device plugin (gpu-h100-1) and DRA (gpu-h100-2)."]
    assert pool["evidence"]["discrepancies"][0]["field"] == "scheduling_model"  # discovery saw it too
    cluster = item(section, "gpu-east")
    assert cluster["verdict"] == "conflict"
    assert cluster["evidence"]["conflicts"] == [
        "GPU ResourceSlices exist although the cluster is declared device plugin."]
    assert section["summary"]["pools_in_conflict"] == ["gpu-east/h100-train"]


def test_a_sign_off_the_nodes_no_longer_follow_is_a_conflict_not_decided(inventory, platform_user):
    decision = decide(platform_user)
    sync("gpu-east", nodes=[h100_dra_node("gpu-h100-1"), h100_dra_node("gpu-h100-2")],
         slices=[k.resource_slice(n, model="H100-80GB", driver="570.124.06") for n in ("gpu-h100-1", "gpu-h100-2")])

    pool = item(build_section(scheduling), "gpu-east/h100-train")

    day = f"{decision.signed_off_at:%Y-%m-%d}"
    assert pool["verdict"] == "conflict"
    assert pool["evidence"]["conflicts"] == [
        "Set to device plugin, but its nodes use DRA.",
        f"Signed off device plugin (pat, {day}), but the nodes report DRA."]
    assert (pool["owner"], pool["signed_off_by"]) == ("platform-team", "pat")  # whose sign-off it contradicts
    assert pool["evidence"]["decision"]["scope"] == "cluster"


def test_a_signed_off_decision_the_pool_follows_is_decided(inventory, platform_user):
    decide(platform_user)
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1"), k.h100_node("gpu-h100-2")])

    section = build_section(scheduling)

    pool = item(section, "gpu-east/h100-train")
    assert (pool["verdict"], pool["owner"], pool["signed_off_by"]) == ("decided", "platform-team", "pat")
    assert pool["rationale"] == "the device plugin until 1.36"
    assert pool["state"] == "device plugin (cluster setting); nodes: 2 device plugin"
    assert "Follows the decision signed off for the whole of gpu-east." in pool["notes"]
    assert item(section, "gpu-east")["verdict"] == "decided"
    assert item(section, "gpu-west")["verdict"] == "inherited"


def test_a_decided_migration_not_carried_out_yet_is_a_conflict(inventory, platform_user):
    decision = decide(platform_user, model="dra", pool="h100-train")
    section = build_section(scheduling)
    pool = item(section, "gpu-east/h100-train")
    assert pool["verdict"] == "conflict"
    assert pool["evidence"]["conflicts"] == [
        f"Signed off DRA (pat, {decision.signed_off_at:%Y-%m-%d}), but it is set to device plugin."]
    assert item(section, "gpu-east/h200-mig")["verdict"] == "inherited"  # a pool decision covers its pool only


def test_a_decision_nobody_signed_off_leaves_the_setting_inherited(inventory, platform_user):
    decide(platform_user, cluster="gpu-west", model="dra", sign=False)
    west = item(build_section(scheduling), "gpu-west/b200-train")
    assert (west["verdict"], west["owner"]) == ("inherited", None)
    assert west["notes"][0] == ("A decision (DRA) owned by platform-team is recorded but not signed off, so it "
                                "does not count.")


def test_migration_preview_re_renders_live_requests_for_dra_without_writing(inventory, engineer, team_a, place):
    team_quota_set(team=Team.objects.get(slug="team-a"), strategy="mig", gpu_equivalents=2)
    chat = place(engineer, team_a, "chat", INFERENCE, "running")
    place(engineer, team_a, "waiting", {**INFERENCE, "gpu_memory_gb": 20}, "pending_approval")  # not live
    rows = lambda: (list(GpuRequest.objects.values_list("pk", "status", "decision", "updated_at")),  # noqa: E731
                    ProvisioningJob.objects.count(), AppliedObject.objects.count())
    before = rows()

    section = build_section(scheduling)

    assert rows() == before  # nothing written
    preview = item(section, "gpu-east/h200-mig")["evidence"]["migration_preview"]
    assert (preview["to"], preview["kubernetes_version"]) == ("dra", "1.35")
    [row] = preview["requests"]
    name = f"chat-r{chat.pk}"
    assert (row["request_id"], row["team"], row["status"], row["strategy"], row["error"]) == (
        chat.pk, "team-a", "running", "mig", None)
    assert row["added"] == [f"ResourceClaimTemplate/gpu-team-a/{name}-gpu"] and row["removed"] == []
    [deployment] = row["changed"]
    assert deployment["object"] == f"Deployment/gpu-team-a/{name}"
    ready = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/mig.config.state", "operator": "In", "values": ["success"]}]}]}}}
    assert [(c["path"], c["change"], c["before"], c["after"]) for c in deployment["changes"]] == [
        ("$.spec.template.spec.affinity", "removed", ready, None),  # DRA pods need no mig-manager label
        ("$.spec.template.spec.containers[0].resources.claims", "added", None, [{"name": "gpu"}]),
        ("$.spec.template.spec.containers[0].resources.limits['nvidia.com/mig-1g.18gb']", "removed", "1", None),
        ("$.spec.template.spec.nodeSelector['nvidia.com/gpu.product']", "removed", "NVIDIA-H200", None),
        ("$.spec.template.spec.nodeSelector['nvidia.com/mig.strategy']", "removed", "mixed", None),
        ("$.spec.template.spec.resourceClaims", "added", None,
         [{"name": "gpu", "resourceClaimTemplateName": f"{name}-gpu"}]),
    ]
    assert row["validation"] == {"valid": True, "objects": row["objects_after"], "problems": []}
    [team] = preview["teams"]
    [quota] = team["changed"]
    assert quota["object"] == "ResourceQuota/gpu-team-a/gpu-quota"
    assert {(c["path"], c["change"]) for c in quota["changes"]} >= {
        ("$.spec.hard['mig.nvidia.com.deviceclass.resource.k8s.io/devices']", "added"),
        ("$.spec.hard['requests.nvidia.com/mig-1g.18gb']", "removed")}
    assert team["validation"]["valid"]
    assert item(section, "gpu-east/h200-mig")["notes"][-1] == (
        "Moving this pool to DRA re-renders 1 live request: adds 1 ResourceClaimTemplate, changes 1 Deployment "
        "(nvidia.com/* limits become a claim in spec.resourceClaims and resources.claims); the namespace quota of "
        "team-a counts DRA devices instead of extended resources; every re-rendered object validates against "
        "Kubernetes 1.35.")
    assert item(section, "gpu-east/h100-train")["evidence"]["migration_preview"]["requests"] == []
    assert item(section, "gpu-west/b200-train")["evidence"]["migration_preview"] is None  # already DRA


def test_the_preview_objects_are_what_the_renderer_makes_for_a_dra_pool(inventory, engineer, team_a, place):
    """The same request placed on a pool declared DRA renders exactly the preview's objects."""
    from provisioning.selectors import request_manifests

    chat = place(engineer, team_a, "chat", INFERENCE)
    preview = item(build_section(scheduling), "gpu-east/h200-mig")["evidence"]["migration_preview"]
    Cluster.objects.get(name="gpu-east").pools.filter(name="h200-mig").update(scheduling_model="dra")
    rendered = request_manifests(gpu_request=chat)
    kinds = sorted(f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}".replace("//", "/")
                   for o in rendered)
    assert set(preview["requests"][0]["added"]) <= set(kinds)
    assert validate_objects(rendered, "1.35") == len(rendered)

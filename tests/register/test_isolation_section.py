"""Section 4, tenant isolation: given the pods the last sync saw on the nodes (`Node.gpu_pods`), the register names
the teams sharing time-sliced GPU nodes, checks that no regulated workload runs on time-slicing (the check passes
or names them), and names NVLink domains with pods of more than one tenant."""
from __future__ import annotations

import pytest

from intake.models import GpuRequest, Rule
from register.sections import isolation
from kubesim import nodes as k
from tests.register.conftest import NOTEBOOK, REGULATED_NOTEBOOK, TRAINING, build_section, item, pod_of, sync

pytestmark = pytest.mark.django_db
SHARED = {"nvidia.com/gpu.shared": 1}
REGULATED = "regulated workloads on time-slicing"
SECURE_TRAINING = {**TRAINING, "tenancy": "multi_tenant", "data_sensitivity": "regulated"}
INITIAL = "platform-team (initial policy)"


@pytest.fixture
def notebooks(inventory, engineer, engineer_b, team_a, team_b, place):
    return {"a": place(engineer, team_a, "notebook", NOTEBOOK), "b": place(engineer_b, team_b, "scratch", NOTEBOOK)}


def test_a_regulated_workload_found_on_a_time_sliced_pool_is_named(notebooks, engineer_b, team_b, place):
    secret = place(engineer_b, team_b, "patient-notebook", REGULATED_NOTEBOOK)
    assert secret.decision.strategy == "mig"  # the guardrail decided MIG; the pod runs elsewhere anyway
    sync("gpu-east", nodes=[k.l40s_shared_node("gpu-l40s-1")], pods=[
        pod_of(notebooks["a"], "notebook-0", node="gpu-l40s-1", resources=SHARED),
        pod_of(secret, "patient-0", node="gpu-l40s-1", resources=SHARED)])

    section = build_section(isolation)

    regulated = item(section, REGULATED)
    assert (regulated["verdict"], regulated["state"]) == (
        "conflict", "VIOLATION: 1 regulated workload on time-sliced GPUs")
    assert regulated["evidence"]["violations"] == [{
        "cluster": "gpu-east", "node": "gpu-l40s-1", "pool": "l40s-shared", "pod": "gpu-team-b/patient-0",
        "request_id": secret.pk, "team": "team-b", "name": "patient-notebook", "source": "node"}]
    assert (regulated["evidence"]["passed"], regulated["evidence"]["time_sliced_nodes_checked"],
            regulated["evidence"]["clusters_not_synced"]) == (False, 1, ["gpu-west"])
    assert regulated["notes"] == [
        f"#{secret.pk} team-b/patient-notebook has pod gpu-team-b/patient-0 on time-sliced node gpu-east/gpu-l40s-1.",
        "Never synced, so their nodes could not be checked: gpu-west (decisions only)."]
    assert regulated["signed_off_by"] == INITIAL  # the guardrail it violates
    shared = item(section, "gpu-east: time-sliced GPUs")
    assert shared["verdict"] == "conflict"
    assert shared["state"] == "team-a + team-b on gpu-l40s-1"
    assert shared["evidence"]["conflicts"] == [
        f"#{secret.pk} team-b/patient-notebook was decided MIG slice but runs on time-sliced node gpu-l40s-1."]
    assert section["summary"]["check_passed"] is False


def test_the_check_passes_and_teams_sharing_time_sliced_nodes_by_policy_are_decided(notebooks, engineer_b, team_b,
                                                                                    place):
    secret = place(engineer_b, team_b, "patient-notebook", REGULATED_NOTEBOOK)
    sync("gpu-east", nodes=[k.l40s_shared_node("gpu-l40s-1"), k.a100_mig_node("gpu-a100-1")], pods=[
        pod_of(notebooks["a"], "notebook-0", node="gpu-l40s-1", resources=SHARED),
        pod_of(notebooks["b"], "scratch-0", node="gpu-l40s-1", resources=SHARED),
        pod_of(secret, "patient-0", node="gpu-a100-1", resources={"nvidia.com/mig-1g.10gb": 1})])

    section = build_section(isolation)

    regulated = item(section, REGULATED)
    assert (regulated["verdict"], regulated["state"], regulated["owner"]) == (
        "decided", "none (check passed)", "platform-team")
    assert regulated["evidence"]["violations"] == [] and regulated["evidence"]["passed"] is True
    assert regulated["notes"][0] == ("No regulated workload on time-slicing: 1 time-sliced node checked for regulated "
                                     "pods, 1 live regulated request checked for a time-slicing decision.")
    shared = item(section, "gpu-east: time-sliced GPUs")
    assert (shared["verdict"], shared["state"], shared["signed_off_by"]) == (
        "decided", "team-a + team-b on gpu-l40s-1", INITIAL)
    assert shared["evidence"]["pairs"] == [{"teams": ["team-a", "team-b"], "nodes": ["gpu-l40s-1"]}]
    assert shared["rationale"].startswith("development-standard: interactive development is idle")
    assert section["summary"]["team_pairs_sharing_time_sliced_nodes"] == [["team-a", "team-b"]]


def test_pods_the_portal_did_not_start_make_time_sliced_sharing_inherited(notebooks):
    sync("gpu-east", nodes=[k.l40s_shared_node("gpu-l40s-1")], pods=[
        pod_of(notebooks["a"], "notebook-0", node="gpu-l40s-1", resources=SHARED),
        k.gpu_pod("adhoc", namespace="research", node="gpu-l40s-1", resources=SHARED)])
    shared = item(build_section(isolation), "gpu-east: time-sliced GPUs")
    assert (shared["verdict"], shared["state"]) == ("inherited", "namespace research + team-a on gpu-l40s-1")
    assert shared["evidence"]["tenants_outside_the_portal"] == ["namespace research"]


def test_a_dedicated_request_sharing_a_time_sliced_node_is_a_conflict(notebooks, engineer, team_a, place):
    solo = place(engineer, team_a, "solo", {**NOTEBOOK, "tenancy": "dedicated"})
    sync("gpu-east", nodes=[k.l40s_shared_node("gpu-l40s-1")], pods=[
        pod_of(solo, "solo-0", node="gpu-l40s-1", resources=SHARED),
        pod_of(notebooks["b"], "scratch-0", node="gpu-l40s-1", resources=SHARED)])
    shared = item(build_section(isolation), "gpu-east: time-sliced GPUs")
    assert shared["verdict"] == "conflict"
    assert shared["evidence"]["conflicts"] == [
        f"#{solo.pk} team-a/solo asked for dedicated GPUs but shares time-sliced node gpu-l40s-1 with team-b."]


def test_a_live_regulated_request_decided_time_slicing_is_a_violation_even_unsynced(notebooks):
    # As if decided under a policy without the guardrail: the answers say regulated, the decision time-slices it.
    GpuRequest.objects.filter(pk=notebooks["a"].pk).update(answers={**notebooks["a"].answers,
                                                                    "data_sensitivity": "regulated"})
    regulated = item(build_section(isolation), REGULATED)
    assert regulated["verdict"] == "conflict"
    assert regulated["evidence"]["violations"] == [{
        "cluster": "gpu-east", "node": None, "pool": "l40s-shared", "pod": None, "request_id": notebooks["a"].pk,
        "team": "team-a", "name": "notebook", "source": "decision"}]
    assert regulated["notes"][0] == f"#{notebooks['a'].pk} team-a/notebook was decided time-slicing on gpu-east/l40s-shared."


def test_without_a_guardrail_nothing_decided_that_regulated_data_is_never_time_sliced(inventory):
    Rule.objects.filter(version__status="active", key="regulated-never-time-sliced").delete()
    regulated = item(build_section(isolation), REGULATED)
    assert (regulated["verdict"], regulated["owner"], regulated["evidence"]["guardrails"]) == ("inherited", None, [])
    assert regulated["notes"][-1] == ("No guardrail in force forbids time-slicing for regulated data: nothing decided "
                                      "it must not happen.")


def test_an_nvlink_domain_a_tenant_exclusive_request_shares_is_a_conflict(inventory, engineer, engineer_b, team_a,
                                                                          team_b, place):
    secure = place(engineer, team_a, "secure-train", SECURE_TRAINING)
    other = place(engineer_b, team_b, "train", TRAINING)
    assert secure.decision.fabric_isolation == "tenant_exclusive" and secure.decision.node_pool == "h100-train"
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1"), k.h100_node("gpu-h100-2")], pods=[
        pod_of(secure, "secure-0", node="gpu-h100-1", resources={"nvidia.com/gpu": 8}),
        pod_of(other, "train-0", node="gpu-h100-2", resources={"nvidia.com/gpu": 8})])

    domains = item(build_section(isolation), "gpu-east: NVLink domains")

    assert domains["verdict"] == "conflict"
    assert domains["state"] == f"{k.H100_CLIQUE} shared by team-a, team-b"
    assert domains["evidence"]["domains"] == [{"clique": k.H100_CLIQUE, "nodes": ["gpu-h100-1", "gpu-h100-2"],
                                               "tenants": ["team-a", "team-b"], "shared": True}]
    assert domains["evidence"]["conflicts"] == [
        f"#{secure.pk} team-a/secure-train is tenant-exclusive but its NVLink domain {k.H100_CLIQUE} also runs team-b."]


def test_an_nvlink_domain_held_under_a_signed_off_fabric_rule_is_decided(inventory, engineer, team_a, place):
    secure = place(engineer, team_a, "secure-train", SECURE_TRAINING)
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1")], pods=[
        pod_of(secure, "secure-0", node="gpu-h100-1", resources={"nvidia.com/gpu": 8})])
    domains = item(build_section(isolation), "gpu-east: NVLink domains")
    assert (domains["verdict"], domains["owner"], domains["signed_off_by"]) == ("decided", "platform-team", INITIAL)
    assert domains["state"] == "no NVLink domain shared by more than one tenant (1 domain, 1 workload)"
    assert domains["rationale"].startswith("regulated-multitenant-fabric:")


def test_shared_nvlink_domains_of_default_fabric_isolation_are_inherited(inventory, engineer, engineer_b, team_a,
                                                                         team_b, place):
    mine, theirs = place(engineer, team_a, "train", TRAINING), place(engineer_b, team_b, "train", TRAINING)
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1"), k.h100_node("gpu-h100-2")], pods=[
        pod_of(mine, "a-0", node="gpu-h100-1", resources={"nvidia.com/gpu": 8}),
        pod_of(theirs, "b-0", node="gpu-h100-2", resources={"nvidia.com/gpu": 8})])
    section = build_section(isolation)
    domains = item(section, "gpu-east: NVLink domains")
    assert (domains["verdict"], domains["owner"]) == ("inherited", None)
    assert domains["notes"] == ["The fabric isolation of the workloads on these domains came from the platform "
                                "default (shared), not from a signed-off rule."]
    assert section["summary"]["shared_nvlink_domains"] == 1

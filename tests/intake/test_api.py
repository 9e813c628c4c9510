"""The REST API v1 contract: every endpoint, each role, visibility, own approval, wrong state, bad input."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from intake.decisions import Decision
from intake.models import GpuRequest, RequestEvent
from provisioning.inventory import team_quota_set
from tests.factories import VALID_ANSWERS, RequestFactory

pytestmark = pytest.mark.django_db


def submit(user, team, name="svc", **answers):
    return RequestFactory(user=user, team=team, name=name, answers={**VALID_ANSWERS, **answers})


# --- questionnaire and preview ----------------------------------------------------------------------------------


def test_questionnaire_lists_every_question_with_its_json_schema(api, engineer):
    response = api(engineer).get("/api/v1/intake/questionnaire/")
    assert response.status_code == 200
    keys = [q["key"] for q in response.json()["questions"]]
    assert keys == ["workload_class", "tenancy", "latency", "data_sensitivity", "gpu_memory_gb", "gpus_per_replica",
                    "replicas", "min_driver_major", "image", "command", "expected_hours", "lease_hours"]
    schema = response.json()["json_schema"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"workload_class", "tenancy", "latency", "gpu_memory_gb", "image"}


def test_questionnaire_needs_authentication(api):
    assert api().get("/api/v1/intake/questionnaire/").status_code == 401


def test_preview_returns_the_decision_and_stores_nothing(api, engineer, team_a, inventory, valid_answers):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": valid_answers}, format="json")
    assert response.status_code == 200, response.json()
    decision = Decision.from_json(response.json()["decision"])
    assert decision.strategy == "mig" and decision.mig_profile == "1g.18gb"
    assert {r.source for r in decision.reasons} >= {"policy", "default"}
    assert GpuRequest.objects.count() == 0 and RequestEvent.objects.count() == 0


def test_preview_for_another_team_is_forbidden(api, engineer, team_b, inventory, valid_answers):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-b", "answers": valid_answers}, format="json")
    assert response.status_code == 403


def test_finance_cannot_preview_or_request(api, finance_user, team_a, inventory, valid_answers):
    client = api(finance_user)
    assert client.post("/api/v1/intake/preview/", {"team": "team-a", "answers": valid_answers}, format="json").status_code == 403
    assert client.post("/api/v1/requests/", {"team": "team-a", "name": "x", "answers": valid_answers},
                       format="json").status_code == 403


# --- create -----------------------------------------------------------------------------------------------------


def test_create_returns_the_request_with_defaults_filled_in(api, engineer, team_a, inventory, valid_answers):
    response = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "chat", "answers": valid_answers},
                                  format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) >= {"id", "name", "team", "status", "answers", "decision", "requested_by", "created_at", "events"}
    assert body["team"] == "team-a" and body["requested_by"] == "eve" and body["status"] == "pending_approval"
    assert body["answers"]["replicas"] == 1 and body["answers"]["gpus_per_replica"] == 1
    assert body["answers"]["data_sensitivity"] == "standard"
    assert sorted(body["defaulted_answers"]) == ["data_sensitivity", "gpus_per_replica", "replicas"]
    assert [(e["from_status"], e["to_status"]) for e in body["events"]] == [("", "pending_approval")]
    assert Decision.from_json(body["decision"]).policy_version == 1


def test_development_requests_are_approved_automatically(api, engineer, team_a, inventory):
    # Only for a team with a quota on the strategy (tests/intake/test_auto_approval.py: without one it is reviewed).
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=1)
    answers = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
               "image": "jupyter/base-notebook:latest"}
    body = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "nb", "answers": answers},
                              format="json").json()
    assert body["status"] == "approved"
    assert [e["to_status"] for e in body["events"]] == ["pending_approval", "approved"]
    assert body["events"][1]["actor"] is None and "development-standard" in body["events"][1]["comment"]


@pytest.mark.parametrize(
    "payload,path",
    [
        ({"name": "Not_A_Label"}, ("name",)),
        ({"name": "-starts-with-dash"}, ("name",)),
        ({"name": "x" * 64}, ("name",)),
        ({"answers": {"colour": "blue"}}, ("answers", "colour")),
        ({"answers": {"replicas": 10000}}, ("answers", "replicas")),
        ({"answers": {"replicas": "two"}}, ("answers", "replicas")),
        ({"answers": {"replicas": True}}, ("answers", "replicas")),
        ({"answers": {"gpu_memory_gb": -4}}, ("answers", "gpu_memory_gb")),
        ({"answers": {"gpu_memory_gb": 0}}, ("answers", "gpu_memory_gb")),
        ({"answers": {"gpu_memory_gb": 4000}}, ("answers", "gpu_memory_gb")),
        ({"answers": {"workload_class": "gaming"}}, ("answers", "workload_class")),
        ({"answers": {"image": "nvcr.io/x:1; rm -rf /"}}, ("answers", "image")),
        ({"answers": {"image": "repo/app:1\nkind: Secret"}}, ("answers", "image")),
        ({"answers": {"image": None}}, ("answers", "image")),
        ({"answers": {"command": "python train.py"}}, ("answers", "command")),
        ({"answers": {"command": ["ok", 3]}}, ("answers", "command")),
        ({"answers": {"min_driver_major": 12}}, ("answers", "min_driver_major")),
        ({"answers": {"expected_hours": -1}}, ("answers", "expected_hours")),
        ({"answers": "not an object"}, ("answers",)),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(api, engineer, team_a, inventory, valid_answers,
                                                               payload, path):
    body = {"team": "team-a", "name": "good-name", "answers": dict(valid_answers)}
    if "answers" in payload and isinstance(payload["answers"], dict):
        body["answers"].update(payload["answers"])
    else:
        body.update({k: v for k, v in payload.items()})
    response = api(engineer).post("/api/v1/requests/", body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()
    for key in path:
        assert key in errors, errors
        errors = errors[key]
    assert GpuRequest.objects.count() == 0


def test_a_request_no_pool_can_hold_is_a_400_on_the_memory_answer(api, engineer, team_a, inventory, valid_answers):
    answers = {**valid_answers, "workload_class": "training", "tenancy": "dedicated", "latency": "batch",
               "gpu_memory_gb": 900}
    response = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "huge", "answers": answers},
                                  format="json")
    assert response.status_code == 400
    assert "largest GPU" in response.json()["answers"]["gpu_memory_gb"][0]


def test_two_live_requests_of_one_team_cannot_share_a_name(api, engineer, team_a, inventory, valid_answers):
    client = api(engineer)
    first = client.post("/api/v1/requests/", {"team": "team-a", "name": "dup", "answers": valid_answers}, format="json")
    second = client.post("/api/v1/requests/", {"team": "team-a", "name": "dup", "answers": valid_answers}, format="json")
    assert first.status_code == 201 and second.status_code == 400 and "name" in second.json()
    client.post(f"/api/v1/requests/{first.json()['id']}/cancel/", {}, format="json")
    third = client.post("/api/v1/requests/", {"team": "team-a", "name": "dup", "answers": valid_answers}, format="json")
    assert third.status_code == 201


def test_multi_replica_training_on_clusters_without_gang_scheduling_is_refused(api, engineer, team_a, inventory):
    from provisioning.models import Cluster

    Cluster.objects.update(gang_scheduler="none")
    answers = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 40,
               "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
    response = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "gang", "answers": answers},
                                  format="json")
    assert response.status_code == 400
    assert "no gang scheduler" in response.json()["answers"]["replicas"][0]


# --- list and detail --------------------------------------------------------------------------------------------


def test_engineers_see_only_their_teams_requests(api, engineer, engineer_b, team_a, team_b, inventory):
    mine = submit(engineer, team_a, "mine")
    theirs = submit(engineer_b, team_b, "theirs")
    listed = api(engineer).get("/api/v1/requests/").json()
    assert [r["id"] for r in listed["results"]] == [mine.pk]
    assert api(engineer).get(f"/api/v1/requests/{theirs.pk}/").status_code == 404
    assert "theirs" not in api(engineer).get("/api/v1/requests/").content.decode()


@pytest.mark.parametrize("role_fixture", ["platform_user", "finance_user"])
def test_platform_and_finance_see_every_team(request, api, role_fixture, engineer, engineer_b, team_a, team_b, inventory):
    submit(engineer, team_a, "mine")
    submit(engineer_b, team_b, "theirs")
    user = request.getfixturevalue(role_fixture)
    assert api(user).get("/api/v1/requests/").json()["count"] == 2


def test_list_filters_by_status_team_and_workload_class(api, platform_user, engineer, engineer_b, team_a, team_b, inventory):
    a = submit(engineer, team_a, "a")
    team_quota_set(team=team_b, strategy="time_slicing", gpu_equivalents=1)  # so the rule approves it automatically
    submit(engineer_b, team_b, "b", workload_class="development", tenancy="dedicated", latency="batch")
    client = api(platform_user)
    assert [r["id"] for r in client.get("/api/v1/requests/?team=team-a").json()["results"]] == [a.pk]
    assert client.get("/api/v1/requests/?status=approved").json()["count"] == 1
    assert client.get("/api/v1/requests/?workload_class=inference").json()["count"] == 1
    assert client.get("/api/v1/requests/?status=bogus").status_code == 400


def test_list_is_paginated_and_its_query_count_does_not_grow_with_the_page(api, platform_user, engineer, team_a, inventory):
    client = api(platform_user)

    def queries_for(count):
        for i in range(count - GpuRequest.objects.count()):
            submit(engineer, team_a, f"r{GpuRequest.objects.count()}-{i}")
        with CaptureQueriesContext(connection) as captured:
            response = client.get(f"/api/v1/requests/?page_size={count}")
        assert response.status_code == 200 and len(response.json()["results"]) == count
        return len(captured)

    assert queries_for(2) == queries_for(12)
    body = client.get("/api/v1/requests/?page_size=5").json()
    assert set(body) == {"count", "next", "previous", "results"} and body["next"]


def test_detail_shows_events(api, engineer, team_a, inventory):
    created = submit(engineer, team_a)
    body = api(engineer).get(f"/api/v1/requests/{created.pk}/").json()
    assert body["id"] == created.pk and body["events"][0]["to_status"] == "pending_approval"


def test_detail_of_a_missing_or_malformed_id_is_404(api, engineer):
    assert api(engineer).get("/api/v1/requests/999999/").status_code == 404
    assert api(engineer).get("/api/v1/requests/abc/").status_code == 404


def test_anonymous_gets_401_everywhere(api):
    client = api()
    for path in ("/api/v1/requests/", "/api/v1/policy/", "/api/v1/clusters/", "/api/v1/requests/1/"):
        assert client.get(path).status_code == 401
    assert client.post("/api/v1/requests/1/approve/", {}, format="json").status_code == 401


# --- approve, reject, cancel ------------------------------------------------------------------------------------


def test_platform_approves_with_an_event(api, engineer, platform_user, team_a, inventory):
    created = submit(engineer, team_a)
    response = api(platform_user).post(f"/api/v1/requests/{created.pk}/approve/", {"comment": "ok"}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "approved"
    last = response.json()["events"][-1]
    assert (last["actor"], last["from_status"], last["to_status"], last["comment"]) == ("pat", "pending_approval", "approved", "ok")


def test_nobody_approves_their_own_request(api, platform_user, team_a, inventory):
    created = submit(platform_user, team_a)
    response = api(platform_user).post(f"/api/v1/requests/{created.pk}/approve/", {}, format="json")
    assert response.status_code == 403
    assert "own request" in response.json()["detail"]
    assert GpuRequest.objects.get(pk=created.pk).status == "pending_approval"


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_engineers_and_finance_cannot_decide(api, action, engineer, finance_user, team_a, inventory):
    created = submit(engineer, team_a)
    for user in (engineer, finance_user):
        assert api(user).post(f"/api/v1/requests/{created.pk}/{action}/", {"comment": "x"}, format="json").status_code == 403


def test_another_teams_engineer_gets_404_not_403(api, engineer, engineer_b, team_a, inventory):
    created = submit(engineer, team_a)
    for action in ("approve", "reject", "cancel"):
        assert api(engineer_b).post(f"/api/v1/requests/{created.pk}/{action}/", {"comment": "x"}, format="json").status_code == 404


def test_reject_needs_a_comment(api, engineer, platform_user, team_a, inventory):
    created = submit(engineer, team_a)
    response = api(platform_user).post(f"/api/v1/requests/{created.pk}/reject/", {"comment": "  "}, format="json")
    assert response.status_code == 400 and "comment" in response.json()
    response = api(platform_user).post(f"/api/v1/requests/{created.pk}/reject/", {"comment": "too big"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"


def test_wrong_state_is_a_409(api, engineer, platform_user, platform_user_2, team_a, inventory):
    created = submit(engineer, team_a)
    api(platform_user).post(f"/api/v1/requests/{created.pk}/reject/", {"comment": "no"}, format="json")
    assert api(platform_user_2).post(f"/api/v1/requests/{created.pk}/approve/", {}, format="json").status_code == 409
    assert api(engineer).post(f"/api/v1/requests/{created.pk}/cancel/", {}, format="json").status_code == 409
    assert GpuRequest.objects.get(pk=created.pk).events.count() == 2


def test_engineers_cancel_their_teams_requests_and_finance_cannot(api, engineer, finance_user, team_a, inventory):
    created = submit(engineer, team_a)
    assert api(finance_user).post(f"/api/v1/requests/{created.pk}/cancel/", {}, format="json").status_code == 403
    response = api(engineer).post(f"/api/v1/requests/{created.pk}/cancel/", {"comment": "not needed"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


def test_comment_must_be_a_string_of_bounded_length(api, engineer, platform_user, team_a, inventory):
    created = submit(engineer, team_a)
    response = api(platform_user).post(f"/api/v1/requests/{created.pk}/approve/", {"comment": "x" * 5000}, format="json")
    assert response.status_code == 400 and "comment" in response.json()


# --- policy and clusters ----------------------------------------------------------------------------------------


def test_policy_shows_the_version_in_force_with_rules_and_sign_off(api, engineer):
    body = api(engineer).get("/api/v1/policy/").json()
    assert body["number"] == 1 and body["status"] == "active"
    keys = {r["key"] for r in body["rules"]}
    assert {"training-dedicated-batch", "inference-shared-latency", "regulated-never-time-sliced"} <= keys
    assert all(r["owner"] and r["signed_off_by"] and r["signed_off_at"] and r["rationale"] for r in body["rules"])


def test_clusters_list_pools_and_never_credentials(api, engineer, inventory):
    from provisioning.models import Cluster, ClusterCredential

    ClusterCredential.objects.create(cluster=Cluster.objects.get(name="gpu-east"), token="s3cret-token")
    response = api(engineer).get("/api/v1/clusters/")
    assert response.status_code == 200
    assert "s3cret-token" not in response.content.decode()
    east = next(c for c in response.json()["results"] if c["name"] == "gpu-east")
    assert {p["name"] for p in east["pools"]} == {"h100-train", "h200-mig", "a100-mig-small", "l40s-shared"}
    assert east["gang_scheduler"] == "volcano"


def test_openapi_schema_and_docs_are_served(client):
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200

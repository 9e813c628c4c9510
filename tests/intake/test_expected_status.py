"""`expected_status` on approve, reject and cancel: a client says which status it acted on, and the transition
happens only if the request is still in it (checked under the row lock), so of many people acting on the same
pending request exactly one wins. Without it, the transitions behave as before (cancel after approval is allowed).
"""
from __future__ import annotations

import pytest

from intake.models import GpuRequest, RequestEvent
from workflows.services import request_submit
from provisioning.models import ProvisioningJob
from tests.conftest import VALID_ANSWERS, client_for
from tests.factories import make_user
from tests.intake.test_concurrency import run_at_once


@pytest.fixture
def pending(engineer, team_a, inventory):
    return request_submit(user=engineer, team=team_a, name="contested", raw_answers=VALID_ANSWERS)


def post(user, gpu_request, action, body):
    return client_for(user).post(f"/api/v1/requests/{gpu_request.pk}/{action}/", body, format="json")


@pytest.mark.django_db
def test_a_transition_from_the_status_the_client_saw_happens(pending, platform_user):
    answer = post(platform_user, pending, "approve", {"expected_status": "pending_approval"})
    assert answer.status_code == 200 and answer.json()["status"] == "approved"


@pytest.mark.django_db
def test_a_request_that_moved_on_is_a_409_and_nothing_changes(pending, engineer, platform_user):
    assert post(platform_user, pending, "approve", {}).status_code == 200

    late_cancel = post(engineer, pending, "cancel", {"expected_status": "pending_approval"})
    late_reject = post(platform_user, pending, "reject", {"comment": "no", "expected_status": "pending_approval"})

    assert late_cancel.status_code == late_reject.status_code == 409
    assert "approved, not pending approval" in late_cancel.json()["detail"]
    assert late_cancel.json()["code"] == "conflict"
    assert GpuRequest.objects.get(pk=pending.pk).status == "approved"
    assert RequestEvent.objects.filter(request=pending).count() == 2  # submitted, approved


@pytest.mark.django_db
def test_without_expected_status_cancel_after_approval_is_still_allowed(pending, engineer, platform_user):
    assert post(platform_user, pending, "approve", {}).status_code == 200
    answer = post(engineer, pending, "cancel", {})
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"


@pytest.mark.django_db
def test_an_unknown_status_is_a_400_naming_the_field(pending, platform_user):
    answer = post(platform_user, pending, "approve", {"expected_status": "waiting"})
    assert answer.status_code == 400 and "expected_status" in answer.json()
    assert GpuRequest.objects.get(pk=pending.pk).status == "pending_approval"


@pytest.mark.django_db
def test_the_schema_documents_expected_status(api, platform_user):
    schema = api(platform_user).get("/api/schema/?format=json").json()
    field = schema["components"]["schemas"]["CommentInputRequest"]["properties"]["expected_status"]
    assert field["allOf"] == [{"$ref": "#/components/schemas/RequestStatusEnum"}]
    assert "409" in field["description"]
    assert "pending_approval" in schema["components"]["schemas"]["RequestStatusEnum"]["enum"]
    for action in ("approve", "reject", "cancel"):
        operation = schema["paths"][f"/api/v1/requests/{{id}}/{action}/"]["post"]
        assert "409" in operation["responses"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_fifty_simultaneous_approvals_rejections_and_cancels_have_exactly_one_winner(engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="fifty", raw_answers=VALID_ANSWERS)
    deciders = [make_user(f"decider-{i}", "platform") for i in range(34)]
    calls = []
    for i in range(50):
        if i < 17:
            user, action, body = deciders[i], "approve", {}
        elif i < 34:
            user, action, body = deciders[i], "reject", {"comment": "not this quarter"}
        else:
            user, action, body = engineer, "cancel", {}
        body["expected_status"] = "pending_approval"
        calls.append(lambda u=user, a=action, b=body: post(u, gpu_request, a, b).status_code)

    statuses = run_at_once(calls)

    assert sorted(statuses) == [200] + [409] * 49, statuses
    decided = RequestEvent.objects.filter(request=gpu_request, kind="transition").exclude(from_status="")
    assert decided.count() == 1
    winner = decided.get()
    assert winner.from_status == "pending_approval"
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == winner.to_status
    jobs = ProvisioningJob.objects.filter(request=gpu_request)
    assert jobs.count() == (1 if winner.to_status == "approved" else 0)

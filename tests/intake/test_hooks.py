"""What the request core still asks of the layers above (intake.hooks: the inventory, its generation, the team's
quota), provided from provisioning's AppConfig.ready(); and what the workflows above do after a status change,
directly: given the installed apps, when a request is approved or cancelled over the API, then provisioning's job
is queued exactly once; a rejection or a cancel before any apply queues nothing."""
from __future__ import annotations

import pytest
from django.apps import apps

from intake import hooks
from intake.decision_cache import decision_inputs
from provisioning.models import ProvisioningJob
from provisioning.selectors import inventory_generation, inventory_snapshot, team_quota_state
from tests.factories import request_submit_via_api

pytestmark = pytest.mark.django_db


def test_provisioning_provides_what_the_decision_reads_even_when_ready_runs_again():
    apps.get_app_config("provisioning").ready()  # tests and reloads may run ready() twice

    assert hooks.inventory_snapshot._function is inventory_snapshot
    assert hooks.inventory_generation._function is inventory_generation
    assert hooks.team_quota_state._function is team_quota_state


def test_an_approval_over_the_api_queues_one_apply_job(api, engineer, platform_user, team_a, inventory,
                                                      valid_answers, django_capture_on_commit_callbacks):
    request_id = request_submit_via_api(api, engineer, name="chat", answers=valid_answers)["id"]
    with django_capture_on_commit_callbacks(execute=False) as dispatched:
        response = api(platform_user).post(f"/api/v1/requests/{request_id}/approve/", {}, format="json")

    assert response.status_code == 200, response.json()
    jobs = ProvisioningJob.objects.filter(request_id=request_id)
    assert [(job.kind, job.status) for job in jobs] == [("apply", "queued")]
    assert len(dispatched) >= 1  # the job's task is sent after commit, not inside the transaction


def test_a_rejection_or_a_cancel_before_any_apply_queues_no_job(api, engineer, platform_user, team_a, inventory,
                                                               valid_answers):
    rejected = request_submit_via_api(api, engineer, name="chat", answers=valid_answers)["id"]
    response = api(platform_user).post(f"/api/v1/requests/{rejected}/reject/", {"comment": "no"}, format="json")
    assert response.status_code == 200, response.json()

    cancelled = request_submit_via_api(api, engineer, name="chat-2", answers=valid_answers)["id"]
    response = api(engineer).post(f"/api/v1/requests/{cancelled}/cancel/", {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "cancelled"

    assert not ProvisioningJob.objects.filter(request_id__in=[rejected, cancelled]).exists()


def test_the_decision_places_on_the_inventory_provisioning_provides(inventory):
    snapshot = hooks.inventory_snapshot()

    assert snapshot == inventory_snapshot()
    assert {cluster.name for cluster in snapshot.clusters} == {"gpu-east", "gpu-west"}
    assert decision_inputs().inventory == snapshot


def test_a_provider_nobody_provided_says_which_one():
    unprovided = hooks.Provider("gpu_weather")

    with pytest.raises(RuntimeError, match="nothing provides gpu_weather"):
        unprovided()

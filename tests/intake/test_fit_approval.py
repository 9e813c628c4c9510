"""The fit check where people meet it: `GET /api/v1/requests/{id}/fit/`, the approval (refused on `never`, noted on
`fits_after`), the admin's review page, and team quotas at approval with the numbers."""
from __future__ import annotations

import pytest
from django.test import Client

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from portal.errors import Conflict
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.inventory_sync import inventory_sync
from tests.conftest import VALID_ANSWERS
from kubesim import nodes as k
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3", "expected_hours": 10}
DEV = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
       "image": "jupyter/base-notebook:latest"}


def sync(cluster):
    assert inventory_sync(cluster=cluster).status == "synced"


@pytest.fixture
def running_training(east_live, live_fake, engineer, team_a, platform_user):
    """A 2 x 8 GPU gang of team-a running on gpu-h100-1 and -2 since 08:00, expected to take 12 hours."""
    gpu_request = request_submit(user=engineer, team=team_a, name="sweep",
                                 raw_answers={**TRAINING, "expected_hours": 12})
    request_approve(user=platform_user, request_id=gpu_request.pk)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status="running")
    for pod in ("train-0", "train-1"):
        live_fake.patch("v1", "Pod", pod, "gpu-team-a",
                        {"metadata": {"labels": {"gpu-portal.io/request-id": str(gpu_request.pk)}}})
    sync(east_live)
    return GpuRequest.objects.get(pk=gpu_request.pk)


def test_a_gang_that_must_wait_fits_after_the_running_one(api, engineer, team_a, running_training):
    waiting = request_submit(user=engineer, team=team_a, name="next", raw_answers=TRAINING)

    body = api(engineer).get(f"/api/v1/requests/{waiting.pk}/fit/").json()

    assert body["verdict"] == "fits_after" and body["basis"] == "discovered"
    assert body["must_finish"] == [{"request_id": running_training.pk, "team": "team-a",
                                    "label": f"#{running_training.pk} team-a/sweep (running)",
                                    "expected_end": "2026-11-30T20:00:00Z"}]
    assert body["reason"] == (f"Fits after #{running_training.pk} team-a/sweep (running) (expected to end "
                              "2026-11-30 20:00 UTC) finishes. 1 of 2 could start now; a gang waits for all.")
    assert body["demand"] == {"resource": "nvidia.com/gpu", "per_pod": 8, "pods": 2, "gang": True,
                              "gpu_model": "H100-80GB", "min_driver_major": None}
    assert body["projection"] == {"expected_hours": 10.0, "gpu_equivalents": 16.0, "gpu_hours": 160.0, "devices": 16,
                                  "device_hours": 160.0, "note": "GPU equivalents x expected_hours"}
    assert body["quota"]["inherited"] and body["quota"]["held"] == 16.0  # the running sweep
    assert body["quota"]["message"].startswith("Team team-a has no whole-GPU quota: unlimited (inherited")


def test_approving_a_fits_after_request_says_so_in_the_event(api, engineer, team_a, platform_user, running_training):
    waiting = request_submit(user=engineer, team=team_a, name="next", raw_answers=TRAINING)

    response = api(platform_user).post(f"/api/v1/requests/{waiting.pk}/approve/", {"comment": "ok"}, format="json")

    assert response.status_code == 200 and response.json()["status"] == "approved"
    event = GpuRequest.objects.get(pk=waiting.pk).events.get(to_status="approved")
    assert event.comment.startswith(f"ok Capacity: does not fit now. Fits after #{running_training.pk} team-a/sweep")


def test_what_fits_now_is_placed(api, engineer, team_a, east_live):
    sync(east_live)
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers={**VALID_ANSWERS, "replicas": 2})

    body = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/fit/").json()

    assert body["verdict"] == "fits_now" and body["demand"]["resource"] == "nvidia.com/mig-1g.18gb"
    assert body["placement"] == [{"node": "gpu-h200-1", "pods": 2}]  # the tighter node: one slice is taken
    assert body["projection"]["gpu_hours"] is None and body["projection"]["note"].startswith("no expected_hours")


def test_a_request_that_can_never_fit_is_refused_at_approval(api, engineer, team_a, platform_user, east_live,
                                                              live_fake):
    gpu_request = request_submit(user=engineer, team=team_a, name="big-slice",
                                 raw_answers={**VALID_ANSWERS, "gpu_memory_gb": 60})
    assert gpu_request.decision.mig_profile == "3g.71gb"
    for name in ("gpu-h200-1", "gpu-h200-2"):  # the layout changed after the decision was made
        live_fake.put(k.h200_mig_node(name, layout="all-1g.18gb"))
    sync(east_live)

    fit = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/fit/").json()
    response = api(platform_user).post(f"/api/v1/requests/{gpu_request.pk}/approve/", {}, format="json")

    assert fit["verdict"] == "never"
    assert fit["reason"].startswith("Needs a 3g.71gb slice and no node offers that layout (the pool's nodes run "
                                    "all-1g.18gb)")
    assert response.status_code == 409
    assert response.json() == {"detail": f"It can never fit its pool: {fit['reason']}", "code": "conflict"}
    assert GpuRequest.objects.get(pk=gpu_request.pk).status == "pending_approval"


def test_a_cluster_never_synced_is_judged_on_its_declared_pools(api, engineer, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="train", raw_answers={**TRAINING, "replicas": 4})
    # The platform team shrinks the pool after the decision (the decision itself skips pools that never fit).
    cluster_declare(name="gpu-east", pools=[{"name": "h100-train", "gpu_model": "H100-80GB", "node_count": 3}])

    body = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/fit/").json()

    assert body["basis"] == "declared" and body["synced_at"] is None and body["verdict"] == "never"
    assert body["reason"] == ("Based on the declared pool (gpu-east has never been synced, so running work is not "
                              "known): The gang needs 4 pods of 8 GPUs per pod at once but the pool's schedulable "
                              "nodes can hold at most 3 even with nothing else running.")


def test_fit_endpoint_visibility(api, engineer, engineer_b, finance_user, platform_user, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    url = f"/api/v1/requests/{gpu_request.pk}/fit/"

    assert api().get(url).status_code == 401
    assert api(engineer_b).get(url).status_code == 404
    assert api(engineer_b).get("/api/v1/requests/999999/fit/").status_code == 404
    for user in (engineer, finance_user, platform_user):
        assert api(user).get(url).status_code == 200
    assert api(platform_user).post(url, {}, format="json").status_code == 405


def test_the_review_page_shows_the_fit_the_projection_and_the_quota(platform_user, engineer, team_a,
                                                                     running_training):
    waiting = request_submit(user=engineer, team=team_a, name="next", raw_answers=TRAINING)
    client = Client()
    client.force_login(platform_user)

    page = client.get(f"/admin/intake/pendingapproval/{waiting.pk}/change/").content.decode()

    assert "Capacity: does it fit?" in page and 'data-verdict="fits_after">Fits after other work finishes</strong>' in page
    assert "Projected: 160 GPU-hours (16 GPU equivalents x 10 h; 160 device-hours)" in page
    assert "Quota: Team team-a has no whole-GPU quota" in page
    assert "(expected end 2026-11-30 20:00 UTC)" in page


# --- quotas ----------------------------------------------------------------------------------------------------


def test_approval_over_quota_is_refused_with_the_numbers(api, engineer, team_a, platform_user, inventory):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=32)
    held = request_submit(user=engineer, team=team_a, name="big", raw_answers={**TRAINING, "replicas": 4})
    assert api(platform_user).post(f"/api/v1/requests/{held.pk}/approve/", {}, format="json").status_code == 200
    small = request_submit(user=engineer, team=team_a, name="small",
                           raw_answers={**TRAINING, "replicas": 1, "gpus_per_replica": 4})

    response = api(platform_user).post(f"/api/v1/requests/{small.pk}/approve/", {}, format="json")

    assert response.status_code == 409
    assert response.json()["detail"] == ("Over quota: Team team-a would hold 36 of 32 whole-GPU equivalents: 32 held "
                                         "+ 4 requested.")
    fit = api(engineer).get(f"/api/v1/requests/{small.pk}/fit/").json()["quota"]
    assert fit == {"strategy": "whole_gpu", "limit": 32.0, "inherited": False, "held": 32.0, "requested": 4.0,
                   "would_hold": 36.0, "exceeded": True,
                   "message": "Team team-a would hold 36 of 32 whole-GPU equivalents: 32 held + 4 requested."}


def test_only_holding_requests_of_the_same_strategy_count(engineer, team_a, platform_user, inventory):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=16)
    first = request_submit(user=engineer, team=team_a, name="first", raw_answers=TRAINING)
    request_approve(user=platform_user, request_id=first.pk)
    GpuRequest.objects.filter(pk=first.pk).update(status="completed")  # finished work holds nothing
    request_submit(user=engineer, team=team_a, name="pending", raw_answers=TRAINING)  # pending holds nothing
    request_submit(user=engineer, team=team_a, name="mig", raw_answers=VALID_ANSWERS)  # another strategy
    second = request_submit(user=engineer, team=team_a, name="second", raw_answers=TRAINING)

    assert request_approve(user=platform_user, request_id=second.pk).status == "approved"


def test_mig_quota_counts_compute_fractions(engineer, team_a, platform_user, inventory):
    team_quota_set(team=team_a, strategy="mig", gpu_equivalents=0.5)
    first = request_submit(user=engineer, team=team_a, name="a", raw_answers={**VALID_ANSWERS, "replicas": 3})
    request_approve(user=platform_user, request_id=first.pk)  # 3 x 1g.18gb = 3/7
    second = request_submit(user=engineer, team=team_a, name="b", raw_answers=VALID_ANSWERS)

    with pytest.raises(Conflict, match=r"would hold 0.571 of 0.5 MIG equivalents: 0.429 held \+ 0.143 requested"):
        request_approve(user=platform_user, request_id=second.pk)


def test_an_automatic_approval_over_quota_waits_for_the_platform_team(engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=0.2)

    gpu_request = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=DEV)

    assert gpu_request.status == "pending_approval"
    note = gpu_request.events.get(reason="OverQuota")
    assert note.comment == ("Not approved automatically: Over quota: Team team-a would hold 0.25 of 0.2 time-sliced "
                            "equivalents: 0 held + 0.25 requested. The platform team decides.")


def test_an_automatic_approval_within_quota_still_happens(engineer, team_a, inventory):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=1)
    assert request_submit(user=engineer, team=team_a, name="notebook", raw_answers=DEV).status == "approved"


def test_an_engineer_does_not_learn_other_teams_work_from_the_fit(api, engineer_b, team_b, running_training):
    waiting = request_submit(user=engineer_b, team=team_b, name="next", raw_answers=TRAINING)

    body = api(engineer_b).get(f"/api/v1/requests/{waiting.pk}/fit/").json()

    assert body["verdict"] == "fits_after"
    assert body["must_finish"] == [{"request_id": None, "team": "", "label": "running work of another team",
                                    "expected_end": "2026-11-30T20:00:00Z"}]
    assert "sweep" not in str(body) and "team-a" not in str(body)

"""Why a request waits, where the wait is not the scheduler's alone: for the platform team's approval (its place in
the queue, whether it fits, whether quota is held), and when the scheduler cannot place what the portal's inventory
has room for (said as a disagreement, with what to check). Cluster state from the fake API server over HTTPS, the
reading taken by the real task (eager)."""
from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from intake.models import GpuRequest
from workflows.services import request_submit
from provisioning.inventory_sync import inventory_sync
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.test_waits import GANG, POD_MESSAGE, applied_workload, approved, page, refresh

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ONE_NODE = {**GANG, "replicas": 1}  # one pod of 8 GPUs


def test_a_request_waiting_for_approval_says_its_place_whether_it_fits_and_that_no_quota_is_held(
        api, engineer, team_a, east_live):
    assert inventory_sync(cluster=east_live).status == "synced"
    first = request_submit(user=engineer, team=team_a, name="first", raw_answers=GANG)
    second = request_submit(user=engineer, team=team_a, name="second", raw_answers=ONE_NODE)
    assert first.status == second.status == "pending_approval"

    body = api(engineer).get(f"/api/v1/requests/{second.pk}/wait/").json()

    assert body["waiting"] is True and body["status"] == "pending_approval"
    approval = body["approval"]
    assert (approval["ahead_in_queue"], approval["fit_verdict"], approval["quota_held"]) == (1, "fits_now", False)
    assert (approval["cluster"], approval["node_pool"]) == ("gpu-east", "h100-train")
    assert approval["words"].startswith("Waiting for the platform team: 1 request ahead in the queue; it fits now (")
    assert approval["words"].endswith("no quota is held for it until it is approved (nothing is applied to the "
                                      "cluster before).")
    assert body["unblock"] == [approval["words"]]
    first_body = api(engineer).get(f"/api/v1/requests/{first.pk}/wait/").json()["approval"]
    assert first_body["ahead_in_queue"] == 0 and first_body["fit_verdict"] == "fits_after"
    assert first_body["words"].startswith("Waiting for the platform team: first in the approval queue; it does not fit now")

    html = page(engineer, second)
    assert 'data-testid="wait-approval"' in html and "1 request ahead in the queue" in html
    assert 'href="/capacity/#pool-gpu-east-h100-train"' in html


def test_a_kueue_workload_found_in_the_cluster_waits_for_approval_holding_no_quota(api, engineer, team_a, east_live):
    # The portal's admission check answers Retry whenever Kueue reserves quota for a found Workload (issue 23 item
    # 5; tests/provisioning/test_admission_quota.py shows it on the simulated Kueue).
    found = request_submit(user=engineer, team=team_a, name="found", raw_answers=ONE_NODE)
    GpuRequest.objects.filter(pk=found.pk).update(origin="cluster")

    approval = api(engineer).get(f"/api/v1/requests/{found.pk}/wait/").json()["approval"]

    assert approval["quota_held"] is False
    assert "waiting for approval; no quota is held" in approval["words"]


def test_when_the_scheduler_cannot_place_what_the_inventory_has_room_for_the_page_says_they_disagree(
        api, engineer, team_a, platform_user, east_live, live_fake, eager_celery):
    waiting = approved(engineer, team_a, platform_user, "single")
    GpuRequest.objects.filter(pk=waiting.pk).update(answers={**waiting.answers, "replicas": 1},
                                                    decision=replace(waiting.decision, replicas=1, gang=None))
    waiting.refresh_from_db()
    job = applied_workload(waiting)
    pod = k8s.pod_for(job, index=0, created=T0)
    live_fake.put(k8s.moved(pod, k8s.unschedulable(pod, T0, POD_MESSAGE)))
    assert inventory_sync(cluster=east_live).status == "synced"  # gpu-h100-4's 8 GPUs are free as far as it saw

    refresh(waiting)

    body = api(engineer).get(f"/api/v1/requests/{waiting.pk}/wait/").json()
    [said] = body["unblock"]
    assert said.startswith("The scheduler and the portal's inventory disagree. The scheduler says: 0/10 nodes are "
                           "available: 2 Insufficient nvidia.com/gpu")
    assert "The inventory of gpu-east (synced " in said and "fits now: 1 on gpu-h100-4" in said
    assert "Check the nodes' taints and cordons" in said and "sync gpu-east again" in said
    assert body["estimated_start"] is None and "disagree" in body["estimate_basis"]
    html = page(engineer, waiting)
    assert "The scheduler and the portal&#x27;s inventory disagree" in html


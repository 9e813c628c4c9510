"""Given a team quota that fits one of two pending requests, when two platform users approve them at the same
instant, then exactly one approval passes and the other is refused with the numbers: the quota sum is taken under
the team's row lock inside the approval's transaction."""
from __future__ import annotations

import time

import pytest

from intake.models import GpuRequest
from workflows.services import request_submit
from provisioning.inventory import team_quota_set
from tests.conftest import client_for
from tests.factories import make_user
from tests.intake.test_concurrency import run_at_once

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 4, "replicas": 1, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


@pytest.fixture
def slow_check(monkeypatch):
    """Hold each approval for a moment after it summed the quota, so both would sum before either commits if
    nothing serialised them."""
    from provisioning import selectors

    original = selectors.request_fit

    def slow(**kwargs):
        answer = original(**kwargs)
        time.sleep(0.3)
        return answer

    monkeypatch.setattr(selectors, "request_fit", slow)


@pytest.mark.parametrize("attempt", range(2))
def test_two_concurrent_approvals_never_both_pass_a_quota_that_fits_one(engineer, team_a, inventory, slow_check,
                                                                        attempt):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=6)
    first = request_submit(user=engineer, team=team_a, name="first", raw_answers=TRAINING)
    second = request_submit(user=engineer, team=team_a, name="second", raw_answers=TRAINING)
    approvers = [client_for(make_user(f"plat-{attempt}-{i}", "platform")) for i in range(2)]

    responses = run_at_once([
        lambda c=approvers[0]: c.post(f"/api/v1/requests/{first.pk}/approve/", {}, format="json"),
        lambda c=approvers[1]: c.post(f"/api/v1/requests/{second.pk}/approve/", {}, format="json"),
    ])

    assert sorted(r.status_code for r in responses) == [200, 409]
    refused = next(r for r in responses if r.status_code == 409)
    assert refused.json()["code"] == "conflict"
    statuses = sorted(GpuRequest.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True))
    assert statuses == ["approved", "pending_approval"]
    # Refused for the quota, with the numbers the refusal names (its wording: test_fit_approval.py).
    waiting = GpuRequest.objects.get(pk__in=[first.pk, second.pk], status="pending_approval")
    quota = approvers[0].get(f"/api/v1/requests/{waiting.pk}/fit/").json()["quota"]
    assert {key: quota[key] for key in ("limit", "held", "requested", "would_hold", "exceeded")} == {
        "limit": 6.0, "held": 4.0, "requested": 4.0, "would_hold": 8.0, "exceeded": True}

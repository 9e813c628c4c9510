"""Who may do what to a request is one rule: the request page and the admin's review page offer exactly the actions
the API then allows.

Given a request (pending, or approved with a running lease, or the platform team's own), when each persona reads
the pages and then tries each action through the API, then an action is offered if and only if the API does it
(200); one not offered is refused (403, 404 or 409), never a server error."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from intake.models import GpuRequest
from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS, client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db

ACTIONS = {  # action: (API path, body, what the page shows for it, which page)
    "approve": ("approve", {"comment": "ok"}, 'data-testid="approve"', "admin"),
    "reject": ("reject", {"comment": "no"}, 'data-testid="reject"', "admin"),
    "cancel": ("cancel", {}, 'data-testid="cancel-form"', "page"),
    "extend": ("extend-lease", {"hours": 1}, 'data-testid="lease-extend-form"', "page"),
}
PERSONAS = ("owner", "teammate", "other_team", "platform", "platform_owner", "finance")


@pytest.fixture
def people(engineer, engineer_b, platform_user, platform_user_2, finance_user, team_a):
    return {"owner": engineer, "teammate": make_user("tess", "engineer", team_a), "other_team": engineer_b,
            "platform": platform_user_2, "platform_owner": platform_user, "finance": finance_user}


def submitted(people, team_a, subject: str) -> GpuRequest:
    requester = people["platform_owner"] if subject == "platform_own" else people["owner"]
    gpu_request = request_submit(user=requester, team=team_a, name=f"r-{GpuRequest.objects.count()}",
                                 raw_answers={**VALID_ANSWERS, "lease_hours": 24})
    if subject == "leased":
        GpuRequest.objects.filter(pk=gpu_request.pk).update(status="approved",
                                                            lease_expires_at=timezone.now() + timedelta(hours=24))
    return gpu_request


def offered(user, gpu_request: GpuRequest, action: str) -> bool:
    *_, marker, where = ACTIONS[action]
    client = Client()
    client.force_login(user)
    url = (f"/admin/intake/gpurequest/{gpu_request.pk}/change/" if where == "admin"
           else f"/requests/{gpu_request.pk}/")
    response = client.get(url)
    return response.status_code == 200 and marker in response.content.decode()


@pytest.mark.parametrize("subject", ["pending", "leased", "platform_own"])
@pytest.mark.parametrize("action", list(ACTIONS))
def test_the_pages_offer_exactly_what_the_api_allows(people, team_a, inventory, subject, action):
    path, body, *_ = ACTIONS[action]
    for persona in PERSONAS:
        gpu_request = submitted(people, team_a, subject)
        user = people[persona]
        shown = offered(user, gpu_request, action)
        response = client_for(user).post(f"/api/v1/requests/{gpu_request.pk}/{path}/", body, format="json")
        assert response.status_code in (200, 403, 404, 409), (persona, response.status_code, response.content[:300])
        assert shown == (response.status_code == 200), (persona, shown, response.status_code, response.json())


def test_the_rule_allows_each_action_to_someone(people, team_a, inventory):
    # The matrix above would pass with nothing ever offered; each action is offered to its persona.
    pending, leased = submitted(people, team_a, "pending"), submitted(people, team_a, "leased")
    assert offered(people["platform"], pending, "approve") and offered(people["platform"], pending, "reject")
    assert offered(people["teammate"], pending, "cancel") and offered(people["owner"], leased, "extend")
    assert not offered(people["platform_owner"], submitted(people, team_a, "platform_own"), "approve")

"""The platform team's approval queue in the admin: review page, approve, reject (needs a comment), never own."""
import pytest
from django.test import Client

from intake.models import GpuRequest
from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


def login(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def pending(engineer, team_a, inventory):
    return request_submit(user=engineer, team=team_a, name="queued", raw_answers=VALID_ANSWERS)


def test_queue_lists_pending_requests_with_what_they_would_get(platform_user, pending):
    page = login(platform_user).get("/admin/intake/pendingapproval/").content.decode()
    assert "queued" in page and "1g.18gb" in page


def test_review_page_shows_decision_reasons_and_forms(platform_user, pending):
    page = login(platform_user).get(f"/admin/intake/pendingapproval/{pending.pk}/change/").content.decode()
    assert "inference-shared-latency" in page and "source-default" in page and 'data-testid="approve"' in page


def test_approve_from_the_admin_calls_the_service(platform_user, pending):
    response = login(platform_user).post(f"/admin/intake/gpurequest/{pending.pk}/approve/", {"comment": "fine"})
    assert response.status_code == 302
    pending.refresh_from_db()
    assert pending.status == "approved" and pending.events.last().actor == platform_user


def test_reject_without_comment_is_refused_with_a_message(platform_user, pending):
    client = login(platform_user)
    response = client.post(f"/admin/intake/gpurequest/{pending.pk}/reject/", {"comment": ""}, follow=True)
    assert "Say why" in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending_approval"
    client.post(f"/admin/intake/gpurequest/{pending.pk}/reject/", {"comment": "use a smaller model"})
    pending.refresh_from_db()
    assert pending.status == "rejected"


def test_own_request_cannot_be_approved_in_the_admin(platform_user, team_a, inventory):
    own = request_submit(user=platform_user, team=team_a, name="own", raw_answers=VALID_ANSWERS)
    client = login(platform_user)
    assert "your own request" in client.get(f"/admin/intake/pendingapproval/{own.pk}/change/").content.decode()
    client.post(f"/admin/intake/gpurequest/{own.pk}/approve/", {})
    assert GpuRequest.objects.get(pk=own.pk).status == "pending_approval"


def test_bulk_approve_skips_own_requests(platform_user, pending, team_a):
    own = request_submit(user=platform_user, team=team_a, name="own", raw_answers=VALID_ANSWERS)
    login(platform_user).post("/admin/intake/pendingapproval/", {
        "action": "approve_selected", "_selected_action": [pending.pk, own.pk]})
    assert GpuRequest.objects.get(pk=pending.pk).status == "approved"
    assert GpuRequest.objects.get(pk=own.pk).status == "pending_approval"


def test_finance_and_engineers_cannot_decide_in_the_admin(finance_user, engineer, pending):
    finance = login(finance_user)
    finance.post(f"/admin/intake/gpurequest/{pending.pk}/approve/", {})
    assert GpuRequest.objects.get(pk=pending.pk).status == "pending_approval"
    assert login(engineer).get("/admin/intake/pendingapproval/").status_code == 302  # not staff: to login

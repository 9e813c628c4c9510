"""Every main page of each persona in Chromium at 1,280 and 1,400 px, on the demo data: its primary action inside
the window (bounding box, not clipped by a table that scrolls sideways, no sideways scrolling of the page); and on
every page a persona opens, the admin's included, axe-core (pinned in package.json) with no serious or critical
violation and the words: no identifier of the vocabulary, no "1 <plural>"."""
from __future__ import annotations

import json

import pytest

from demo.data import load_demo
from intake.models import GpuRequest
from tests.browser.pages import action_problems, axe_problems, axe_source, sign_in, word_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

ROW_LINK = "#result_list tbody tr:first-child th a, #result_list tbody tr:first-child td.field-__str__ a"


def pages_of(persona: str) -> list[tuple[str, str | None, str]]:
    """(path, the primary action's selector or None for a page that only reads, what the action is)."""
    pending = GpuRequest.objects.filter(status="pending_approval", requested_by__username="alice").order_by("pk").first()
    return {
        "alice": [
            ("/requests/", "[data-testid=request-table] tbody tr:first-child a", "a request of hers"),
            ("/requests/new/", "[data-testid=submit]", "Submit request"),
            (f"/requests/{pending.pk}/", "[data-testid=cancel-form] button[type=submit]", "Cancel request"),
            ("/capacity/", None, "read only"),
            ("/chargeback/", "[data-testid=csv-link]", "Download CSV"),
        ],
        "pat": [
            ("/approvals/", "[data-testid=approval-queue] [data-testid=review]", "Review"),
            (f"/admin/intake/pendingapproval/{pending.pk}/change/", "[data-testid=approve]", "Approve"),
            ("/capacity/", None, "read only"),
            ("/requests/", "[data-testid=request-table] tbody tr:first-child a", "a request"),
            ("/register/", None, "read only"),
            ("/admin/", "#content-main a", "the first admin section"),
            ("/admin/intake/pendingapproval/", "#result_list a.button", "Review (admin queue)"),
            ("/admin/provisioning/nodepool/", "#result_list tbody tr:first-child td.field-upgrade_impact a",
             "driver upgrade impact"),
            ("/admin/provisioning/cluster/", ROW_LINK, "a cluster"),
            ("/admin/provisioning/migplan/", None, "empty without a live cluster"),
            ("/admin/provisioning/gangstall/", None, "empty without a live cluster"),
            ("/admin/intake/policyversion/", ROW_LINK, "a policy version"),
            ("/admin/chargeback/ratecard/", ROW_LINK, "a rate card"),
        ],
        "fiona": [
            ("/chargeback/", "[data-testid=csv-link]", "Download CSV"),
            ("/chargeback/teams/vision/", "[data-testid=csv-link]", "Download CSV"),
            ("/requests/", "[data-testid=request-table] tbody tr:first-child a", "a request"),
        ],
    }[persona]


LANDS = {"alice": "/requests/", "pat": "/requests/", "fiona": "/chargeback/"}


@pytest.fixture
def demo(settings, tmp_path):
    settings.PORTAL_DATA_DIR = tmp_path
    load_demo()


@pytest.fixture(scope="session")
def axe():
    return axe_source()


@pytest.mark.parametrize("width", [1280, 1400])
@pytest.mark.parametrize("persona", ["alice", "pat", "fiona"])
def test_each_main_pages_primary_action_is_in_the_window(page, live_server, demo, persona, width):
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, live_server, persona, lands=LANDS[persona])
    found = {}
    for path, action, what in pages_of(persona):
        page.goto(f"{live_server.url}{path}")
        if path == "/requests/new/":
            page.locator("[data-testid=preview]").wait_for()
        problems = action_problems(page, action, what) if action else []
        if not action and page.evaluate("document.documentElement.scrollWidth") > width:
            problems.append(f"the page is wider than the {width} px window")
        if problems:
            found[path] = problems
    assert not found, json.dumps(found, indent=1)


@pytest.mark.parametrize("persona", ["alice", "pat", "fiona"])
def test_every_page_a_persona_opens_passes_axe_and_speaks_words(page, live_server, demo, persona, axe):
    page.set_viewport_size({"width": 1400, "height": 900})
    sign_in(page, live_server, persona, lands=LANDS[persona])
    found = {}
    for path, _, _ in pages_of(persona):
        page.goto(f"{live_server.url}{path}")
        if path == "/requests/new/":
            # The questionnaire with its preview filled in: the page an engineer reads before submitting.
            page.select_option("select[name=workload_class]", "training")
            page.select_option("select[name=tenancy]", "dedicated")
            page.select_option("select[name=latency]", "batch")
            page.fill("input[name=gpu_memory_gb]", "60")
            page.fill("input[name=gpus_per_replica]", "8")
            page.fill("input[name=replicas]", "1")
            page.fill("input[name=image]", "nvcr.io/nvidia/pytorch:25.01-py3")
            page.fill("input[name=expected_hours]", "100")
            page.locator("input[name=expected_hours]").dispatch_event("change")
            page.locator("[data-testid=cost-preview]").wait_for()
        problems = axe_problems(page, axe) + word_problems(page)
        if problems:
            found[path] = problems
    assert not found, json.dumps(found, indent=1)

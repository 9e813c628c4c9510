"""The three personas in a real browser (headless Chromium driven by Playwright) against a live server holding
the quickstart's demo data, with a real Celery worker behind it.

- an engineer fills the questionnaire, sees the live preview change as the answers change, submits, and sees
  the request pending;
- a platform user approves it from the approval queue and sees it move on to provisioning;
- finance opens the chargeback page, changes the period, sees the chart, downloads the CSV and finds the rows.
"""
from __future__ import annotations

import csv
import io

import pytest
from django.utils import timezone

from chargeback.periods import add_months, month_start
from intake.models import GpuRequest
from demo.data import DEMO_PASSWORD, load_demo
from tests.support.celery_worker import running_worker, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def demo(settings, tmp_path):
    settings.PORTAL_DATA_DIR = tmp_path  # the demo clusters' GitOps repositories
    load_demo()


def sign_in(page, live_server, username, *, lands="/requests/"):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}{lands}")


def test_engineer_platform_and_finance(page, live_server, demo, shot):
    # --- the engineer: questionnaire, live preview, submit ------------------------------------------------------
    sign_in(page, live_server, "alice")
    page.goto(f"{live_server.url}/requests/new/")
    page.fill("input[name=name]", "vision-serving")
    page.select_option("select[name=workload_class]", "inference")
    page.select_option("select[name=tenancy]", "multi_tenant")
    page.select_option("select[name=latency]", "latency_sensitive")
    page.fill("input[name=image]", "nvcr.io/nvidia/tritonserver:25.01-py3")
    page.fill("input[name=gpu_memory_gb]", "16")
    page.locator("input[name=gpu_memory_gb]").dispatch_event("change")
    summary = page.locator("[data-testid=decision-summary]")
    summary.filter(has_text="1g.18gb").wait_for()
    shot(page, "01-engineer-preview-16gb")

    page.fill("input[name=gpu_memory_gb]", "30")
    page.locator("input[name=gpu_memory_gb]").dispatch_event("change")
    summary.filter(has_text="2g.35gb").wait_for()
    assert "hardware-isolated 2g.35gb slice of an H200-141GB" in summary.inner_text()
    shot(page, "02-engineer-preview-30gb")

    page.click("[data-testid=submit]")
    page.locator("[data-testid=request-status]").filter(has_text="Pending approval").wait_for()
    gpu_request = GpuRequest.objects.get(team__slug="vision", name="vision-serving")
    assert gpu_request.status == "pending_approval" and gpu_request.decision.mig_profile == "2g.35gb"
    shot(page, "03-engineer-submitted")
    page.click("text=Log out")

    # --- the platform team: the approval queue, approve, and it moves on -----------------------------------------
    with running_worker():
        sign_in(page, live_server, "pat")
        page.click("text=Approval queue")
        row = page.locator("[data-testid=approval-queue] tr", has_text="vision-serving")
        shot(page, "04-platform-queue")
        row.locator("[data-testid=review]").click()
        page.locator("[data-testid=review-status]").wait_for()
        shot(page, "05-platform-review")
        page.fill("#approve-comment", "fits the inference budget")
        page.click("[data-testid=approve]")
        page.locator(".messagelist", has_text=f"Request #{gpu_request.pk} approved").wait_for()
        wait_for(lambda: GpuRequest.objects.get(pk=gpu_request.pk).status == "provisioning",
                 message="the approved request to be provisioned")
    page.goto(f"{live_server.url}/admin/intake/pendingapproval/{gpu_request.pk}/change/")
    page.locator("[data-testid=review-status]").filter(has_text="Provisioning").wait_for()
    assert page.locator("[data-testid=objects]").filter(has_text="Deployment").count() == 1
    shot(page, "06-platform-provisioning")
    page.click("text=Log out") if page.locator("text=Log out").count() else page.goto(f"{live_server.url}/admin/logout/")

    # --- finance: the chargeback page (where she lands), another period, the chart, the CSV -------------------------
    sign_in(page, live_server, "fiona", lands="/chargeback/")
    this_month = month_start(timezone.now().date())
    start, end = add_months(this_month, -1), add_months(this_month, 1)
    page.fill("#id_start", start.isoformat())
    page.fill("#id_end", end.isoformat())
    page.click("[data-testid=report-form] button[type=submit]")
    page.wait_for_url(f"**start={start.isoformat()}**")
    assert page.locator("svg").count() >= 1
    table_rows = page.locator("[data-testid=report-table] tbody tr").count()
    assert table_rows > 0
    shot(page, "07-finance-report")

    with page.expect_download() as download_info:
        page.click("[data-testid=csv-link]")
    download = download_info.value
    assert download.suggested_filename == f"gpu-chargeback_{start.isoformat()}_{end.isoformat()}.csv"
    text = open(download.path(), encoding="utf-8-sig").read()
    rows = list(csv.DictReader(io.StringIO(text)))  # the header is the first line
    assert len(rows) == table_rows
    assert {"team", "strategy", "gpu_model", "device_hours", "gpu_equivalent_hours", "cost", "currency"} <= set(rows[0])
    assert {r["team"] for r in rows} >= {"vision", "nlp", "recsys"}

"""The demo on the simulated cluster, in a real browser: the demo data and its flows run on `kubesim` (fast
scenario) with a real Celery worker, the beat's tasks dispatched by the test, and nobody clicking anything until
every "must show" of issue 17 is there: a running training gang, a completed job, a stalled gang notified, this month's usage on the finance page and a MIG plan that completed. Then each persona's main page
is saved to docs/screenshots/ (sim-*.png, listed in docs/screenshots/README.md), the capacity page among them, its
figures checked against the clusters API."""
from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest
from django.utils import timezone

from chargeback.models import UsageInterval
from chargeback.periods import add_months, month_start
from chargeback.tasks import usage_collect
from intake.models import GpuRequest
from kubesim.kubelet import Simulation
from kubesim.runner import loop_in_background, register_and_sync, serve_and_seed
from kubesim.scenario import Scenario
from demo.data import load_demo, load_demo_flows
from provisioning.models import GangStall, MigPlan
from provisioning.tasks import mig_plans_advance, status_reconcile_all
from provisioning.wait_refresh import request_wait_refresh
from tests.browser.test_personas import sign_in
from tests.support.celery_worker import running_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
FAST = Scenario(start_seconds=0.5, run_seconds=3, run_seconds_by_name=(("detector-pretrain", 86400),),
                stall_gangs=("llm-pretrain",), time_scale=0.01)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def simulated_cluster(settings, tmp_path):
    settings.PORTAL_DATA_DIR = tmp_path  # gpu-west stays a GitOps repository
    settings.PORTAL_RECONCILE_WATCH_SECONDS = 0  # each reconcile run lists the pods; the test is the beat
    load_demo()
    fake = serve_and_seed(port=_free_port(), ca_dir=tmp_path / "simulator")
    try:
        yield fake
    finally:
        fake.stop()


def _statuses() -> dict[str, str]:
    names = ("detector-pretrain", "eval-checkpoints", "llm-pretrain")
    return dict(GpuRequest.objects.filter(name__in=names).values_list("name", "status"))


def _shown() -> dict[str, bool]:
    month = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return {
        "running gang": _statuses().get("detector-pretrain") == "running",
        "completed job": _statuses().get("eval-checkpoints") == "completed",
        "stalled gang": _statuses().get("llm-pretrain") == "stalled",
        "stall notified": GangStall.objects.filter(request__name="llm-pretrain", notified_at__isnull=False).exists(),
        "usage this month": UsageInterval.objects.filter(request__name="detector-pretrain",
                                                         started_at__gte=month).exists(),
        "MIG plan done": MigPlan.objects.filter(status="done").exists(),
    }


def test_the_demo_shows_every_flow_on_the_simulated_cluster_without_a_click(page, live_server, simulated_cluster,
                                                                           shot):
    with running_worker():
        register_and_sync(simulated_cluster, name="gpu-east")
        load_demo_flows(cluster_name="gpu-east", training_stall_after_seconds=5)
        with loop_in_background(Simulation(simulated_cluster, FAST), tick_seconds=0.3):
            # Generous: on a loaded 2-core machine the flows have taken over 150 s (each step is event-driven).
            deadline = time.monotonic() + 420
            while not all(_shown().values()):  # play the beat until everything is there
                assert time.monotonic() < deadline, f"not shown within 420 s: {_shown()}, {_statuses()}"
                status_reconcile_all.delay()
                usage_collect.delay()
                mig_plans_advance.delay()
                time.sleep(2)

            # The engineer's requests: the training gang running, the evaluation completed.
            sign_in(page, live_server, "alice")
            page.goto(f"{live_server.url}/requests/")
            page.locator("tr", has_text="detector-pretrain").filter(has_text="Running").wait_for()
            page.locator("tr", has_text="eval-checkpoints").filter(has_text="Completed").wait_for()
            saved = [shot(page, "sim-1-engineer-requests")]

            # A running request's page: its GPU-hours so far, its expected end, how to reach it.
            running = GpuRequest.objects.get(name="detector-pretrain")
            page.goto(f"{live_server.url}/requests/{running.pk}/")
            page.locator("[data-testid=gpu-hours-so-far]").wait_for()
            assert f"request-id={running.pk}" in page.locator("[data-testid=kubectl]").inner_text()
            assert "Expected to end" in page.locator("[data-testid=running]").inner_text()
            page.click("text=Log out")

            # The platform team: the stalled gang's page names the Unschedulable rank, says who was notified, and
            # its wait agrees with the inventory (the simulated cluster's burn-in pods hold the room); the MIG plan
            # is done.
            sign_in(page, live_server, "pat")
            stalled = GpuRequest.objects.get(name="llm-pretrain")
            page.goto(f"{live_server.url}/requests/{stalled.pk}/")
            page.get_by_text("Unschedulable").first.wait_for()
            notices = page.locator("[data-testid=stall-notices]").inner_text()
            assert "nlp-team@example.com" in notices and "were notified" not in notices
            request_wait_refresh(request_id=stalled.pk)  # what the beat's wait refresh runs, now
            page.reload()
            wait = page.locator("[data-testid=wait]").inner_text()
            assert "No node has 8 free GPUs" in wait and "disagree" not in wait and "fits now" not in wait, wait
            saved.append(shot(page, "sim-2-platform-stalled-gang"))

            # The capacity page, from the simulated cluster: its figures are the clusters API's.
            page.goto(f"{live_server.url}/capacity/")
            table = page.locator("[data-testid=capacity-pool][data-pool='gpu-east/h100-train']")
            shown = {f: table.locator(f"tr[data-kind=whole_gpu] [data-figure={f}]").inner_text()
                     for f in ("total", "allocated", "free")}
            api = page.request.get(f"{live_server.url}/api/v1/clusters/").json()["results"]
            east = next(c for c in api if c["name"] == "gpu-east")
            whole = next(p for p in east["pools"] if p["name"] == "h100-train")["capacity"]["whole_gpu"]
            assert shown == {"total": f"{whole['devices_total']} GPUs", "allocated": f"{whole['devices_used']} GPUs",
                             "free": f"{whole['devices_free']} GPUs"}, (shown, whole)
            assert "No node has 8 free GPUs" in table.inner_text()  # the stalled rank's 8 GPUs are nowhere
            saved.append(shot(page, "sim-5-platform-capacity"))
            plan = MigPlan.objects.get(status="done")
            page.goto(f"{live_server.url}/admin/provisioning/migplan/{plan.pk}/change/")
            page.get_by_text("h200-mig-1").first.wait_for()
            saved.append(shot(page, "sim-3-platform-mig-plan"))
            page.click("text=Log out")

            # Finance: this month's usage of the simulated cluster's requests on the chargeback page.
            sign_in(page, live_server, "fiona", lands="/chargeback/")
            this_month = month_start(timezone.now().date())
            next_month = add_months(this_month, 1)
            page.goto(f"{live_server.url}/chargeback/")
            page.fill("#id_start", this_month.isoformat())
            page.fill("#id_end", next_month.isoformat())
            page.click("[data-testid=report-form] button[type=submit]")
            page.wait_for_url(f"**start={this_month.isoformat()}**")
            row = page.locator("[data-testid=report-table] tbody tr", has_text="vision").filter(has_text="H100-80GB")
            row.wait_for()  # the simulated gang's GPU-hours, accruing since it started
            assert page.locator("svg").count() >= 1
            saved.append(shot(page, "sim-4-finance-this-month"))

    SCREENSHOTS.mkdir(exist_ok=True)
    for path in saved:
        shutil.copy(path, SCREENSHOTS / path.name)

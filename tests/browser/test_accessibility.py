"""Each persona's main pages in Chromium, checked by the axe-core engine (serious and critical violations fail),
with one h1 per page; and the approval queue fits a 1,400 x 900 window, its Review button inside the viewport.

axe-core 4.14.1 (npm) is installed into var/axe/node_modules the first time, and injected with Playwright.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from intake.models import GpuRequest
from demo.data import DEMO_PASSWORD, load_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

AXE_VERSION = "4.14.1"
AXE_DIR = Path(__file__).resolve().parents[2] / "var" / "axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="session")
def axe_source() -> str:
    installed = AXE_DIR / "node_modules" / "axe-core" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != AXE_VERSION:
        if not shutil.which("npm"):
            pytest.skip("npm is needed to install axe-core")
        AXE_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund",
                        "--prefix", str(AXE_DIR), f"axe-core@{AXE_VERSION}"], check=True, timeout=300)
    return AXE_JS.read_text()


@pytest.fixture
def demo(settings, tmp_path):
    settings.PORTAL_DATA_DIR = tmp_path
    load_demo()


def sign_in(page, live_server, username):
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/requests/")


def problems(page, axe_source) -> list[str]:
    """Serious and critical axe violations of the page as loaded, and a wrong number of h1 headings."""
    # axe is the test's tool, not the page's code: run it outside the page's Content-Security-Policy.
    page.evaluate(axe_source)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    found = [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
             for v in result["violations"] if v["impact"] in {"serious", "critical"}]
    h1 = page.locator("h1").count()
    if h1 != 1:
        found.append(f"{h1} h1 headings, not one")
    return found


def test_each_personas_main_pages_pass_axe(page, live_server, demo, axe_source):
    pending = GpuRequest.objects.filter(status="pending_approval").order_by("pk").first()
    any_request = GpuRequest.objects.order_by("pk").first()
    pages = {
        "alice": ["/requests/", "/requests/new/", f"/requests/{any_request.pk}/"],
        "pat": ["/requests/", "/admin/intake/pendingapproval/", f"/admin/intake/pendingapproval/{pending.pk}/change/",
                "/register/"],
        "fiona": ["/requests/", "/chargeback/"],
    }
    seen = {}
    for user, urls in pages.items():
        sign_in(page, live_server, user)
        for url in urls:
            page.goto(f"{live_server.url}{url}")
            if url == "/requests/new/":
                page.locator("[data-testid=preview]").wait_for()
            seen[f"{user} {url}"] = problems(page, axe_source)
    failing = {k: v for k, v in seen.items() if v}
    assert not failing, json.dumps(failing, indent=1)


def test_the_approval_queue_fits_a_1400_px_window(page, live_server, demo):
    page.set_viewport_size({"width": 1400, "height": 900})
    sign_in(page, live_server, "pat")
    page.goto(f"{live_server.url}/admin/intake/pendingapproval/")
    button = page.locator("#result_list a.button", has_text="Review").first
    button.wait_for()
    box = button.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1400, box
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400

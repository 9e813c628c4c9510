"""The Content-Security-Policy breaks nothing: a real Chromium loads the portal's pages, the admin and Swagger UI
and reports no violation."""
from __future__ import annotations

import pytest

from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

WATCH = """() => { window.__csp = []; document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)); }"""


def test_no_page_violates_the_policy(page, live_server):
    make_user("pat", "platform", password="pw-for-tests-1")
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    page.add_init_script(WATCH.removeprefix("() => {").removesuffix("}"))
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "pat")
    page.fill("#id_password", "pw-for-tests-1")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    for path in ("/admin/", "/admin/portal/apitoken/", "/admin/portal/apitoken/add/", "/requests/",
                 "/accounts/tokens/", "/api/docs/"):
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        violations += page.evaluate("() => window.__csp || []")
    # Swagger UI rendered the API (its start-up script ran, from a file).
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock-summary", timeout=30000)
    violations += page.evaluate("() => window.__csp || []")
    assert violations == []

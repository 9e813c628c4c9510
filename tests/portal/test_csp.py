"""Every page carries a strict Content-Security-Policy: scripts only from our own origin, never inline."""
import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in policy.split(";") if part.strip())}


@pytest.mark.parametrize("path", ["/accounts/login/", "/api/docs/", "/admin/login/", "/api/v1/me/", "/healthz"])
def test_responses_carry_a_policy_without_inline_scripts(path):
    policy = directives(Client().get(path))
    assert policy["default-src"] == ["'self'"] and policy["script-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]


def test_the_pages_have_no_inline_script_for_the_policy_to_block(platform_user):
    client = Client()
    client.force_login(platform_user)
    for path in ("/accounts/tokens/", "/requests/", "/api/docs/", "/admin/", "/admin/portal/apitoken/"):
        page = client.get(path).content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), path  # every <script> loads a file
        assert not re.search(r"\son[a-z]+=", page), path  # no inline event handlers


def test_swagger_ui_start_up_script_is_served_as_a_file():
    response = Client().get("/api/docs/?script=")
    assert response.status_code == 200 and "SwaggerUIBundle" in response.content.decode()

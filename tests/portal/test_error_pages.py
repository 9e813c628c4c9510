"""The web's 403 and 500 pages: in the portal's layout, with the view's own message, and a 403 logs one line."""
from __future__ import annotations

import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_403_page_carries_the_views_message_in_the_portals_layout(engineer, caplog):
    with caplog.at_level(logging.INFO):
        response = login(engineer).get("/register/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "Only the platform team reads the decision register." in html
    assert "portal/portal.css" in html and "<h1>Not allowed</h1>" in html
    assert 'href="/requests/"' in html  # the header navigation is there: the user is still signed in
    # An ordinary refusal is one warning line, with no traceback.
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    forbidden = [r for r in caplog.records if "Forbidden" in r.getMessage()]
    assert len(forbidden) == 1 and forbidden[0].levelno == logging.WARNING


def test_a_500_page_is_styled_and_says_what_to_do(engineer, settings, caplog):
    settings.ROOT_URLCONF = "tests.portal.error_urls"
    client = login(engineer)
    client.raise_request_exception = False
    with caplog.at_level(logging.INFO):
        response = client.get("/broken/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "portal/portal.css" in html and "<h1>Something went wrong</h1>" in html
    assert "tell the platform team" in html and "a bug in a view" not in html
    # A real fault keeps its traceback in the log.
    assert any(r.exc_info and r.levelno == logging.ERROR for r in caplog.records)

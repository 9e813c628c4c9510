"""Login throttling and API rate limiting per token."""
import pytest
from django.core.cache import cache
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clean_counters():
    cache.clear()
    yield
    cache.clear()


def test_sign_in_is_refused_after_too_many_failures_even_with_the_right_password(engineer, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 3
    client = Client()
    for _ in range(3):
        assert client.post("/accounts/login/", {"username": "eve", "password": "wrong"}).status_code == 200
    locked = client.post("/accounts/login/", {"username": "eve", "password": "pw-for-tests-1"})
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    # Another user from the same address is not locked out.
    assert client.post("/accounts/login/", {"username": "other", "password": "x"}).status_code == 200


def test_a_successful_sign_in_resets_the_count(engineer, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 3
    client = Client()
    for _ in range(2):
        client.post("/accounts/login/", {"username": "eve", "password": "wrong"})
    assert client.post("/accounts/login/", {"username": "eve", "password": "pw-for-tests-1"}).status_code == 302
    for _ in range(2):
        assert client.post("/accounts/login/", {"username": "eve", "password": "wrong"}).status_code == 200


def test_api_requests_are_limited_per_token_with_retry_after(api, engineer, engineer_b, settings):
    settings.PORTAL_API_RATE = "5/min"
    client = api(engineer)
    statuses = [client.get("/api/v1/intake/questionnaire/").status_code for _ in range(6)]
    assert statuses == [200] * 5 + [429]
    limited = client.get("/api/v1/intake/questionnaire/")
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
    assert api(engineer_b).get("/api/v1/intake/questionnaire/").status_code == 200  # another token

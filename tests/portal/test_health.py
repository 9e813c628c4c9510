import pytest

pytestmark = pytest.mark.django_db


def test_healthz_answers_without_login(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_checks_database_and_broker(client):
    body = client.get("/readyz").json()
    assert body == {"status": "ready", "checks": {"database": "ok", "broker": "ok"}}


def test_readyz_is_503_when_the_broker_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["broker"] != "ok"


def test_readyz_tells_anonymous_callers_only_ok_or_not_ok(client, settings, caplog):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "not ready", "checks": {"database": "ok", "broker": "not ok"}}
    assert "127.0.0.1" not in response.content.decode()
    # What failed is in the log for the operators.
    assert any("broker unavailable" in r.getMessage() and "ConnectionError" in r.getMessage() for r in caplog.records)


def test_readyz_shows_the_platform_team_what_failed(client, settings, platform_user, engineer):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    as_engineer = client.get("/readyz", HTTP_AUTHORIZATION=f"Token {engineer.api_token}")
    assert as_engineer.json()["checks"]["broker"] == "not ok"
    as_platform = client.get("/readyz", HTTP_AUTHORIZATION=f"Token {platform_user.api_token}")
    assert as_platform.status_code == 503 and "ConnectionError" in as_platform.json()["checks"]["broker"]

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

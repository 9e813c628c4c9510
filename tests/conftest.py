"""Shared fixtures: teams and people in each role, the demo inventory, API clients per persona."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from provisioning.demo import CLUSTERS
from provisioning.inventory import cluster_declare
from tests.factories import VALID_ANSWERS, RequestFactory, TeamFactory, make_user, request_approve_now
from tests.support.celery_worker import eager, running_worker

# The fake Kubernetes API server (fixtures fake_kube, start_fake_kube, kube_connection, kube_client), and the
# webhook receivers' address allowed for webhooks.
pytest_plugins = ["tests.support.fake_kube", "tests.support.webhook"]

__all__ = ["VALID_ANSWERS", "client_for"]


@pytest.fixture
def inventory(db):
    """The demo clusters: gpu-east (1.35, device plugin, Volcano) and gpu-west (1.36, DRA, native gang)."""
    clusters = []
    for spec in CLUSTERS:
        spec = dict(spec)
        clusters.append(cluster_declare(pools=spec.pop("pools"), **spec))
    return clusters


@pytest.fixture
def team_a(db):
    return TeamFactory(slug="team-a", name="Team A", cost_center="CC-A")


@pytest.fixture
def team_b(db):
    return TeamFactory(slug="team-b", name="Team B", cost_center="CC-B")


@pytest.fixture
def engineer(team_a):
    return make_user("eve", "engineer", team_a)


@pytest.fixture
def engineer_b(team_b):
    return make_user("oscar", "engineer", team_b)


@pytest.fixture
def platform_user(db):
    return make_user("pat", "platform")


@pytest.fixture
def platform_user_2(db):
    return make_user("quinn", "platform")


@pytest.fixture
def finance_user(db):
    return make_user("fiona", "finance")


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {user.api_token}")
    return client


@pytest.fixture
def api():
    """`api(user)` -> an APIClient authenticated with that user's token; `api()` is anonymous."""
    return client_for


@pytest.fixture
def valid_answers():
    return dict(VALID_ANSWERS)


@pytest.fixture
def submitted_request(inventory, engineer, team_a):
    """team-a's engineer's request for `VALID_ANSWERS`, submitted (through `decide()`), waiting for approval."""
    return RequestFactory(user=engineer, team=team_a, name="submitted")


@pytest.fixture
def approved_request(submitted_request, platform_user, django_capture_on_commit_callbacks):
    """`submitted_request`, approved by the platform team (what the approval sends after commit has run)."""
    return request_approve_now(submitted_request, platform_user, django_capture_on_commit_callbacks)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2 costs ~0.3 s a user; tests make many users and do not test hashing strength.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def eager_celery():
    """Dispatched tasks run in-process, retries included (tests.support.celery_worker.eager)."""
    with eager():
        yield


@pytest.fixture
def real_worker():
    """A real Celery worker (solo pool, in a thread) on the test run's Redis broker, emptied before it starts so it
    runs this test's tasks only. The test needs `django_db(transaction=True, serialized_rollback=True)`."""
    with running_worker() as worker:
        yield worker

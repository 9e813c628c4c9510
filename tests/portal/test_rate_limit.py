"""The per-user API rate limit holds under concurrency: many simultaneous requests on one token against a live
server and the real Redis get exactly `limit` answers 200, the rest 429 with Retry-After."""
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
import requests
from django.core.cache import cache

from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

LIMIT = 40
REQUESTS = 160
THREADS = 16


@pytest.fixture(autouse=True)
def clean_counters():
    cache.clear()
    yield
    cache.clear()


def test_concurrent_requests_on_one_token_get_exactly_the_limit(live_server, settings):
    settings.PORTAL_API_RATE = f"{LIMIT}/hour"  # one window for the whole test, however slow the machine
    user = make_user("eve", "engineer")
    url = live_server.url + "/api/v1/me/"
    headers = {"Authorization": f"Token {user.api_token}"}
    start = Barrier(THREADS)

    def burst(_):
        session = requests.Session()
        start.wait()  # every thread fires at once
        return [session.get(url, headers=headers, timeout=60) for _ in range(REQUESTS // THREADS)]

    with ThreadPoolExecutor(THREADS) as pool:
        responses = [response for batch in pool.map(burst, range(THREADS)) for response in batch]

    statuses = [response.status_code for response in responses]
    assert statuses.count(200) == LIMIT and statuses.count(429) == REQUESTS - LIMIT, sorted(set(statuses))
    limited = next(response for response in responses if response.status_code == 429)
    assert 0 < int(limited.headers["Retry-After"]) <= 3600
    assert limited.json()["code"] == "throttled"


def test_the_window_is_per_user(live_server, settings):
    settings.PORTAL_API_RATE = "2/hour"
    eve, oscar = make_user("eve", "engineer"), make_user("oscar", "engineer")
    url = live_server.url + "/api/v1/me/"
    as_eve = [requests.get(url, headers={"Authorization": f"Token {eve.api_token}"}, timeout=30) for _ in range(3)]
    assert [r.status_code for r in as_eve] == [200, 200, 429]
    assert requests.get(url, headers={"Authorization": f"Token {oscar.api_token}"}, timeout=30).status_code == 200


def test_an_unavailable_redis_does_not_fail_the_api(api, engineer, settings):
    settings.PORTAL_RATE_LIMIT_REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    assert api(engineer).get("/api/v1/me/").status_code == 200

"""Query strings the API's schema forbids are refused, not read as "no filter": an empty `?format=`, a boolean
filter that is neither true nor false, an empty chargeback filter; and a timestamp with an offset PostgreSQL does
not take is compared in UTC instead of failing."""
import pytest

pytestmark = pytest.mark.django_db


def test_an_empty_format_is_refused_like_an_unknown_one(api, platform_user, inventory):
    client = api(platform_user)
    assert client.get("/api/v1/backstage/entities/?format=").status_code == 404
    assert client.get("/api/v1/backstage/entities/?format=xml").status_code == 404
    assert client.get("/api/v1/backstage/entities/?format=json").status_code == 200


@pytest.mark.parametrize("query, field", [
    ("open=null", "open"), ("is_demo=maybe", "is_demo"), ("started_before=", "started_before"), ("strategy=", "strategy"),
])  # fmt: skip
def test_chargeback_interval_filters_are_strict(api, platform_user, query, field):
    response = api(platform_user).get(f"/api/v1/chargeback/intervals/?{query}")
    assert response.status_code == 400 and field in response.json()


def test_a_far_offset_timestamp_is_compared_in_utc(api, platform_user):
    response = api(platform_user).get("/api/v1/chargeback/intervals/?started_before=0608-04-14T11%3A20%3A48-22%3A12")
    assert response.status_code == 200

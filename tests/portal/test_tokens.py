"""API tokens: hashed at rest, several per user with names and expiry, issued and revoked by their owner (page and
API) and by the platform team (admin), last use recorded, revoked by a password change."""
from datetime import timedelta
from io import StringIO

import pytest
import redis
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from portal.models import ApiToken
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

ME = "/api/v1/me/"
TOKENS = "/api/v1/tokens/"


def as_token(secret):
    client = Client()
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {secret}"
    return client


def test_an_issued_token_works_and_the_database_never_holds_it(api, engineer):
    cache.clear()
    response = api(engineer).post(TOKENS, {"name": "ci-job"})
    assert response.status_code == 201
    body = response.json()
    secret = body.pop("token")
    assert body["name"] == "ci-job" and body["prefix"] == secret[:12] and body["active"] is True
    assert as_token(secret).get(ME).json()["username"] == "eve"
    # Not in any column of any table (the whole database, dumped as text), nor in the rate limiter's Redis keys.
    with connection.cursor() as cursor:
        cursor.execute("SELECT string_agg(t::text, ' ') FROM portal_apitoken t")
        assert secret not in cursor.fetchone()[0]
    keys = redis.Redis.from_url(django_settings.PORTAL_RATE_LIMIT_REDIS_URL).keys("*")
    assert keys and not any(secret.encode() in key for key in keys)
    # Shown once: listing and reading it again give the prefix only.
    listed = api(engineer).get(TOKENS).json()["results"]
    assert secret not in str(listed) and {t["name"] for t in listed} == {"tests", "ci-job"}
    assert "token" not in api(engineer).get(f"{TOKENS}{body['id']}/").json()


def test_bad_token_input_gets_field_level_400s(api, engineer):
    client = api(engineer)
    client.post(TOKENS, {"name": "ci-job"})
    assert client.post(TOKENS, {"name": "ci-job"}).json() == {
        "name": ["You already have a token named 'ci-job': pick another name or revoke that one."]}
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    assert set(client.post(TOKENS, {"name": "old", "expires_at": past}).json()) == {"expires_at"}
    assert set(client.post(TOKENS, {"name": "x", "expires_at": "next tuesday"}).json()) == {"expires_at"}
    assert set(client.post(TOKENS, {"name": "  "}).json()) == {"name"}
    assert set(client.post(TOKENS, {"name": "n" * 101}).json()) == {"name"}
    # The schema says text: a number is the client's bug, not a name to store as "-368".
    assert client.post(TOKENS, {"name": -368}).json() == {"name": ["Must be text, not int."]}
    assert not ApiToken.objects.filter(name="-368").exists()
    assert client.post(TOKENS, {}).status_code == 400


def test_a_revoked_token_stops_working_and_nobody_revokes_anothers(api, engineer, engineer_b, platform_user):
    issued = api(engineer).post(TOKENS, {"name": "laptop"}).json()
    assert api(engineer_b).delete(f"{TOKENS}{issued['id']}/").status_code == 404
    assert api(platform_user).delete(f"{TOKENS}{issued['id']}/").status_code == 404  # the admin is theirs
    assert as_token(issued["token"]).get(ME).status_code == 200
    assert api(engineer).delete(f"{TOKENS}{issued['id']}/").status_code == 204
    revoked = as_token(issued["token"]).get(ME)
    assert revoked.status_code == 401 and revoked.json()["detail"] == "Invalid, expired or revoked token."
    assert api(engineer).get(f"{TOKENS}{issued['id']}/").json()["active"] is False
    # The other token of the same user still works, and the name is free again.
    assert api(engineer).get(ME).status_code == 200
    assert api(engineer).post(TOKENS, {"name": "laptop"}).status_code == 201


def test_a_token_expires(api, engineer):
    expires = (timezone.now() + timedelta(days=7)).isoformat()
    issued = api(engineer).post(TOKENS, {"name": "week", "expires_at": expires}).json()
    assert as_token(issued["token"]).get(ME).status_code == 200
    # A week later:
    ApiToken.objects.filter(pk=issued["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert as_token(issued["token"]).get(ME).status_code == 401


def test_last_use_is_recorded(api, engineer):
    token = ApiToken.objects.get(user=engineer)
    assert token.last_used_at is None
    api(engineer).get(ME)
    token.refresh_from_db()
    assert timezone.now() - token.last_used_at < timedelta(minutes=1)


def test_the_tokens_page_issues_shows_once_and_revokes(engineer):
    client = Client()
    client.force_login(engineer)
    page = client.post("/accounts/tokens/", {"name": "notebook", "expires_in_days": "30"})
    secret = page.context["issued_secret"]
    assert page.status_code == 200 and secret in page.content.decode()
    assert as_token(secret).get(ME).status_code == 200
    again = client.get("/accounts/tokens/").content.decode()
    assert secret not in again and secret[:12] in again
    token = ApiToken.objects.get(user=engineer, name="notebook")
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert client.post("/accounts/tokens/", {"name": "notebook"}).context["form"].errors["name"]
    assert client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 302
    assert as_token(secret).get(ME).status_code == 401


def test_the_platform_team_issues_and_revokes_tokens_in_the_admin(engineer, platform_user, finance_user):
    admin = Client()
    admin.force_login(platform_user)
    page = admin.post("/admin/portal/apitoken/add/", {"user": engineer.pk, "name": "service-account"})
    assert page.status_code == 200
    secret = page.context["clear"]
    assert as_token(secret).get(ME).json()["username"] == "eve"
    duplicate = admin.post("/admin/portal/apitoken/add/", {"user": engineer.pk, "name": "service-account"})
    assert duplicate.status_code == 200 and "already has an active token" in duplicate.content.decode()
    token = ApiToken.objects.get(name="service-account")
    listing = admin.get("/admin/portal/apitoken/").content.decode()
    assert token.prefix in listing and secret not in listing
    admin.post("/admin/portal/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert as_token(secret).get(ME).status_code == 401
    assert as_token(engineer.api_token).get(ME).status_code == 200  # only the selected one
    # Finance is staff but reads and changes nothing here.
    finance = Client()
    finance.force_login(finance_user)
    assert finance.get("/admin/portal/apitoken/").status_code == 403


def test_a_password_change_in_the_admin_revokes_the_users_tokens(engineer, platform_user, django_user_model):
    admin = Client()
    # Django's own password form (auth's UserAdmin), which calls none of our services.
    admin.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "root-pw-1"))
    response = admin.post(f"/admin/auth/user/{engineer.pk}/password/",
                          {"password1": "a-New-passw0rd!", "password2": "a-New-passw0rd!"})
    assert response.status_code == 302
    assert as_token(engineer.api_token).get(ME).status_code == 401
    assert as_token(platform_user.api_token).get(ME).status_code == 200  # only that user's


def run(*args) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_create_portal_user_with_a_new_password_revokes_tokens_unless_asked_to_keep_them(engineer):
    kept = client_for(engineer)
    run("create_portal_user", "eve", "--role", "engineer", "--password", "pw-for-tests-1")  # the same password
    assert kept.get(ME).status_code == 200
    run("create_portal_user", "eve", "--role", "engineer", "--password", "another-pw-2", "--keep-tokens")
    assert kept.get(ME).status_code == 200
    bootstrap = run("create_portal_user", "eve", "--role", "engineer", "--password", "third-pw-3")[-1]
    assert kept.get(ME).status_code == 401
    assert as_token(bootstrap).get(ME).status_code == 200  # the token the command printed is issued after


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_clear_tokens_of_the_old_table_keep_working_after_the_migration(engineer):
    from django.db.migrations.executor import MigrationExecutor

    old_key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # DRF's format: 40 hex digits
    executor = MigrationExecutor(connection)
    executor.migrate([("portal", "0004_api_tokens")])
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, created timestamptz NOT NULL, "
                       "user_id integer NOT NULL)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, now() - interval '30 days', %s)", [old_key, engineer.pk])
    try:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM authtoken_token")
            assert cursor.fetchone()[0] == 0  # the clear values are gone
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS authtoken_token")
    migrated = ApiToken.objects.get(user=engineer, name="migrated")
    assert migrated.prefix == old_key[:8] and timezone.now() - migrated.created_at > timedelta(days=29)
    assert as_token(old_key).get(ME).json()["username"] == "eve"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_owner_revokes_a_token_outside_any_test_transaction(api, engineer):
    """As in production, every request in autocommit mode (no test transaction around it): the owner's DELETE and
    the page's revoke each end the token at once."""
    issued = api(engineer).post(TOKENS, {"name": "leaked"}).json()
    assert as_token(issued["token"]).get(ME).status_code == 200
    assert api(engineer).delete(f"{TOKENS}{issued['id']}/").status_code == 204
    assert as_token(issued["token"]).get(ME).status_code == 401

    page_issued = api(engineer).post(TOKENS, {"name": "leaked-too"}).json()
    browser = Client()
    browser.force_login(engineer)
    assert browser.post(f"/accounts/tokens/{page_issued['id']}/revoke/").status_code == 302
    assert as_token(page_issued["token"]).get(ME).status_code == 401


def test_a_user_has_one_rate_limit_whatever_token_they_use(api, engineer, settings):
    """Tokens are free to make: each one must not bring a fresh allowance."""
    cache.clear()
    settings.PORTAL_API_RATE = "4/hour"
    second = api(engineer).post(TOKENS, {"name": "second"}).json()["token"]  # the first call of the window
    answers = [as_token(token).get(ME).status_code for token in (engineer.api_token, second) * 3]
    assert answers == [200, 200, 200, 429, 429, 429]
    cache.clear()


def test_a_user_holds_a_bounded_number_of_working_tokens(api, engineer, platform_user, settings):
    settings.PORTAL_MAX_TOKENS_PER_USER = 3  # the fixture's token is one
    client = api(engineer)
    issued = [client.post(TOKENS, {"name": f"t{n}"}) for n in range(3)]
    assert [r.status_code for r in issued] == [201, 201, 400]
    assert "the most one person may" in issued[2].json()["name"][0]
    assert client.delete(f"{TOKENS}{issued[0].json()['id']}/").status_code == 204
    assert client.post(TOKENS, {"name": "t3"}).status_code == 201  # revoked ones do not count
    ApiToken.objects.filter(name="t3").update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.post(TOKENS, {"name": "t4"}).status_code == 201  # nor expired ones
    # The admin says so on its form instead of failing.
    admin = Client()
    admin.force_login(platform_user)
    page = admin.post("/admin/portal/apitoken/add/", {"user": engineer.pk, "name": "one-more"})
    assert page.status_code == 200 and "the most one person may" in page.content.decode()
    assert ApiToken.objects.filter(user=engineer, revoked_at__isnull=True, expires_at__isnull=True).count() == 3

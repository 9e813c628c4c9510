"""Single sign-on, driven end to end over HTTP: a browser-like `requests` session against the live portal, which
talks to a local OpenID Connect provider (tests/oidc_provider.py) for discovery, token, JWKS and userinfo."""
from __future__ import annotations

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.cache import cache

from portal.models import Membership
from portal.oidc import IdentityRejected, identity_from_claims, parse_role_groups
from portal.roles import primary_role
from tests.factories import TeamFactory, make_user
from tests.oidc_provider import OidcProviderStub

live = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def provider(settings):
    with OidcProviderStub() as stub:
        cache.clear()  # the discovery document is cached per URL
        settings.OIDC_ENABLED = True
        settings.OIDC_RP_CLIENT_ID = stub.client_id
        settings.OIDC_RP_CLIENT_SECRET = stub.client_secret
        settings.OIDC_OP_DISCOVERY_URL = stub.discovery_url
        settings.OIDC_ROLE_GROUPS = "platform=gpu-platform,finance=gpu-finance,engineer=gpu-users"
        settings.OIDC_TEAM_GROUP_PREFIX = "gpu-team-"
        yield stub


@pytest.fixture
def browsers():
    """New browser-like sessions; closed at the end so the live server's keep-alive threads (and their database
    connections) end with the test."""
    opened = []

    def new() -> requests.Session:
        opened.append(requests.Session())
        return opened[-1]

    yield new
    for session in opened:
        session.close()


@pytest.fixture
def sso_login(live_server, browsers):
    def login(next_path="/requests/") -> tuple[requests.Session, requests.Response]:
        """What a browser does: portal -> provider's /authorize -> portal's callback -> the page asked for."""
        browser = browsers()
        response = browser.get(f"{live_server.url}/oidc/authenticate/", params={"next": next_path}, timeout=30)
        return browser, response

    return login


@live
def test_sso_creates_the_user_maps_role_and_teams_and_logs_in(live_server, provider, sso_login):
    TeamFactory(slug="vision")
    TeamFactory(slug="nlp")
    provider.sign_in_as(sub="u-123", preferred_username="dana", email="dana@example.com", given_name="Dana",
                        groups=["gpu-users", "gpu-team-vision", "/gpu-team-nlp", "gpu-team-unknown", "other"])

    browser, page = sso_login()

    assert page.status_code == 200 and page.url == f"{live_server.url}/requests/"
    assert "dana" in page.text and "Sign in" not in page.text.split("<main>")[0]
    # The real protocol was spoken: discovery, authorize, token, JWKS, userinfo.
    assert [path for _, path in provider.calls] == [
        "/.well-known/openid-configuration", "/authorize", "/token", "/jwks", "/userinfo"]
    dana = get_user_model().objects.get(username="dana")
    assert primary_role(dana) == "engineer" and not dana.is_staff
    assert (dana.email, dana.first_name) == ("dana@example.com", "Dana")
    assert sorted(dana.teams.values_list("slug", flat=True)) == ["nlp", "vision"]  # unknown team ignored
    assert not dana.has_usable_password()
    # The session works for the API too.
    assert browser.get(f"{live_server.url}/api/v1/requests/", timeout=10).status_code == 200


@live
def test_sso_updates_a_bootstrap_account_and_its_local_password_keeps_working(live_server, provider, sso_login,
                                                                           browsers):
    vision, nlp = TeamFactory(slug="vision"), TeamFactory(slug="nlp")
    make_user("pat", "engineer", vision, nlp, password="local-bootstrap-pw")
    provider.sign_in_as(sub="u-9", preferred_username="pat", groups=["gpu-users", "gpu-platform", "gpu-team-nlp"])

    _, page = sso_login(next_path="/")
    assert page.status_code == 200

    pat = get_user_model().objects.get(username="pat")
    assert primary_role(pat) == "platform" and pat.is_staff
    # The provider owns SSO users' memberships: vision is gone, nlp stays.
    assert list(Membership.objects.filter(user=pat).values_list("team__slug", flat=True)) == ["nlp"]
    assert pat.check_password("local-bootstrap-pw")

    local = browsers()
    login_page = local.get(f"{live_server.url}/accounts/login/", timeout=10)
    assert "Sign in with SSO" in login_page.text
    response = local.post(f"{live_server.url}/accounts/login/", timeout=10, data={
        "username": "pat", "password": "local-bootstrap-pw", "csrfmiddlewaretoken": local.cookies["csrftoken"]},
        headers={"Referer": f"{live_server.url}/accounts/login/"})
    assert not response.url.startswith(f"{live_server.url}/accounts/login/") and "pat" in response.text


@live
@pytest.mark.parametrize("tamper", ["signature", "nonce", "audience", "issuer", "expired", "userinfo_sub"])
def test_an_answer_that_does_not_verify_is_refused(live_server, provider, sso_login, tamper):
    provider.sign_in_as(sub="u-1", preferred_username="mallory", groups=["gpu-platform"])
    provider.tamper = tamper

    browser, page = sso_login()

    assert page.url.startswith(f"{live_server.url}/accounts/login/")
    assert "could not be verified" in page.text
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert browser.get(f"{live_server.url}/api/v1/requests/", timeout=10).status_code in (401, 403)


@live
def test_a_person_in_no_portal_group_is_told_so(live_server, provider, sso_login):
    provider.sign_in_as(sub="u-2", preferred_username="visitor", groups=["staff"])
    _, page = sso_login()
    assert page.url.startswith(f"{live_server.url}/accounts/login/")
    assert "none of the portal&#x27;s groups" in page.text
    assert not get_user_model().objects.filter(username="visitor").exists()


@live
def test_a_replayed_callback_is_refused(live_server, provider, browsers):
    provider.sign_in_as(sub="u-3", preferred_username="erin", groups=["gpu-finance"])
    browser = browsers()
    to_provider = browser.get(f"{live_server.url}/oidc/authenticate/", allow_redirects=False, timeout=10)
    callback = browser.get(to_provider.headers["Location"], allow_redirects=False, timeout=10).headers["Location"]
    assert browser.get(callback, timeout=30).url == f"{live_server.url}/chargeback/"  # home -> finance's page
    # The same code and state again, from another browser: the state is not in its session.
    stranger = browsers()
    page = stranger.get(callback, timeout=30)
    assert page.url.startswith(f"{live_server.url}/accounts/login/") and "stale" in page.text


@pytest.mark.django_db
def test_without_configuration_sso_is_off_and_local_login_alone_is_offered(client, settings):
    settings.OIDC_ENABLED = False
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    assert "Sign in with SSO" not in client.get("/accounts/login/").content.decode()
    make_user("lee", "engineer")
    assert client.login(username="lee", password="pw-for-tests-1")


ROLE_GROUPS = parse_role_groups("platform=gpu-platform,finance=gpu-finance,engineer=gpu-users,engineer=ml")


def identity(claims, **kwargs):
    options = dict(groups_claim="groups", username_claim="preferred_username", role_groups=ROLE_GROUPS,
                   team_prefix="gpu-team-")
    return identity_from_claims(claims, **{**options, **kwargs})


def test_the_highest_role_wins_and_team_groups_become_slugs():
    found = identity({"sub": "1", "preferred_username": "kim", "groups": ["ml", "gpu-finance", "gpu-team-a"]})
    assert (found.role, found.team_slugs) == ("finance", ("a",))


def test_groups_may_be_a_single_string_and_the_username_may_come_from_sub():
    found = identity({"sub": "kim@example.com", "groups": "gpu-users"})
    assert (found.username, found.role, found.team_slugs) == ("kim@example.com", "engineer", ())


def test_an_unverified_email_is_not_taken():
    found = identity({"sub": "1", "preferred_username": "kim", "groups": ["ml"], "email": "k@x.io",
                      "email_verified": False})
    assert found.email == ""


@pytest.mark.parametrize("claims", [
    {"sub": "1", "preferred_username": "has space", "groups": ["ml"]},
    {"sub": "", "groups": ["ml"]},
    {"sub": "1", "preferred_username": "kim", "groups": []},
])
def test_unusable_identities_are_rejected(claims):
    with pytest.raises(IdentityRejected):
        identity(claims)


def test_role_group_configuration_is_checked():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        parse_role_groups("admin=gpu-admins")
    with pytest.raises(ImproperlyConfigured):
        parse_role_groups("platform")

"""Single sign-on, driven end to end over HTTP: a browser-like `requests` session against the live portal, which
talks to a local OpenID Connect provider (tests/oidc_provider.py) for discovery, token, JWKS and userinfo."""
from __future__ import annotations

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.cache import cache

from portal.models import Membership, SignOnIdentity
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


def password_login(live_server, browser, username, password) -> requests.Response:
    browser.get(f"{live_server.url}/accounts/login/", timeout=10)
    return browser.post(f"{live_server.url}/accounts/login/", timeout=10, data={
        "username": username, "password": password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
        headers={"Referer": f"{live_server.url}/accounts/login/"})


@live
def test_a_provider_user_name_never_adopts_a_local_account(live_server, provider, sso_login, browsers):
    """The provider lets people choose `preferred_username`: an identity calling itself "pat" gets an account of
    its own with the role its groups give, and the local platform user pat is neither entered nor demoted."""
    vision, nlp = TeamFactory(slug="vision"), TeamFactory(slug="nlp")
    make_user("pat", "platform", vision, password="local-bootstrap-pw")
    make_user("breakglass", "engineer", password="break-glass-pw")
    provider.sign_in_as(sub="u-9", preferred_username="pat", email="pat@evil.example",
                        groups=["gpu-users", "gpu-team-nlp"])

    browser, page = sso_login(next_path="/")
    assert page.status_code == 200
    me = browser.get(f"{live_server.url}/api/v1/me/", timeout=10).json()
    host = "127.0.0.1"  # the provider's issuer host names the second "pat"
    assert me == {"username": f"pat@{host}", "role": "engineer", "teams": ["nlp"]}
    pat = get_user_model().objects.get(username="pat")
    assert primary_role(pat) == "platform" and pat.is_staff and pat.email == ""
    assert list(Membership.objects.filter(user=pat).values_list("team__slug", flat=True)) == ["vision"]
    assert "pat" in password_login(live_server, browsers(), "pat", "local-bootstrap-pw").text

    # The same identity again: the same account, found by issuer and subject, whatever name it now gives.
    provider.sign_in_as(sub="u-9", preferred_username="patricia", groups=["gpu-users"])
    again, _ = sso_login(next_path="/")
    assert again.get(f"{live_server.url}/api/v1/me/", timeout=10).json()["username"] == f"pat@{host}"

    # A platform group does not make a local engineer account a platform one either.
    provider.sign_in_as(sub="u-10", preferred_username="breakglass", groups=["gpu-platform"])
    sso_login(next_path="/")
    assert primary_role(get_user_model().objects.get(username="breakglass")) == "engineer"
    assert primary_role(get_user_model().objects.get(username=f"breakglass@{host}")) == "platform"
    assert SignOnIdentity.objects.filter(user__username__in=["pat", "breakglass"]).count() == 0


@live
def test_a_verified_email_links_an_existing_account_only_when_the_operator_turns_it_on(
    live_server, provider, sso_login, settings
):
    vision = TeamFactory(slug="vision")
    alex = make_user("alex", "engineer", vision)
    get_user_model().objects.filter(pk=alex.pk).update(email="alex@example.com")
    provider.sign_in_as(sub="u-20", preferred_username="alexander", email="Alex@example.com", email_verified=True,
                        groups=["gpu-finance"])
    settings.OIDC_LINK_VERIFIED_EMAIL = True

    browser, _ = sso_login(next_path="/")
    # Linked by the verified address; the role and teams are the identity's groups' alone.
    assert browser.get(f"{live_server.url}/api/v1/me/", timeout=10).json() == {
        "username": "alex", "role": "finance", "teams": []}
    assert SignOnIdentity.objects.get(subject="u-20").linked_by == "verified_email"

    # An address the provider does not say it verified links nothing.
    casey = make_user("casey", "engineer")
    get_user_model().objects.filter(pk=casey.pk).update(email="casey@example.com")
    provider.sign_in_as(sub="u-21", preferred_username="casey2", email="casey@example.com", groups=["gpu-users"])
    browser, _ = sso_login(next_path="/")
    assert browser.get(f"{live_server.url}/api/v1/me/", timeout=10).json()["username"] == "casey2"


@live
def test_password_sign_in_works_while_the_identity_provider_is_down(live_server, provider, browsers, settings):
    make_user("lee", "engineer", password="lee-local-pw")
    provider.__exit__(None, None, None)  # the provider stops answering; nothing was cached from it
    cache.clear()

    browser = browsers()
    response = password_login(live_server, browser, "lee", "lee-local-pw")
    assert response.status_code == 200 and not response.url.startswith(f"{live_server.url}/accounts/login/")
    assert browser.get(f"{live_server.url}/api/v1/me/", timeout=10).json()["username"] == "lee"
    # Starting single sign-on says the provider is down, on the login page, instead of a 500.
    sso = browsers().get(f"{live_server.url}/oidc/authenticate/", timeout=30)
    assert sso.status_code == 200 and sso.url.startswith(f"{live_server.url}/accounts/login/")
    assert "did not answer" in sso.text


@live
def test_the_provider_error_code_picks_a_fixed_message_and_nothing_of_the_query_is_shown(live_server, provider,
                                                                                    browsers):
    evil = "Your account is suspended: call +1 555 0100 or visit evil.example"
    page = browsers().get(f"{live_server.url}/oidc/callback/", params={"error": evil, "error_description": evil},
                          timeout=30)
    assert page.url.startswith(f"{live_server.url}/accounts/login/")
    assert "evil.example" not in page.text and "refused the sign-in request" in page.text
    denied = browsers().get(f"{live_server.url}/oidc/callback/", params={"error": "access_denied"}, timeout=30)
    assert "refused the sign-in, or it was cancelled" in denied.text


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


def test_an_unverified_email_is_not_taken_and_only_an_explicit_yes_is_verified():
    found = identity({"sub": "1", "preferred_username": "kim", "groups": ["ml"], "email": "k@x.io",
                      "email_verified": False})
    assert found.email == "" and not found.email_verified
    unsaid = identity({"sub": "1", "preferred_username": "kim", "groups": ["ml"], "email": "k@x.io"})
    assert unsaid.email == "k@x.io" and not unsaid.email_verified
    said = identity({"sub": "1", "preferred_username": "kim", "groups": ["ml"], "email": "k@x.io",
                     "email_verified": "true"})
    assert said.email_verified


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

"""Brute-force protection of every password sign-in: the portal's login page and the admin's (portal.signin)."""
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client

pytestmark = pytest.mark.django_db

RIGHT = "pw-for-tests-1"
ADMIN_LOGIN = "/admin/login/?next=/admin/"


def admin_sign_in(client, username, password, **extra):
    return client.post(ADMIN_LOGIN, {"username": username, "password": password, "next": "/admin/"}, **extra)


def test_the_admin_login_refuses_the_right_password_after_too_many_failures(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 5
    client = Client()
    for _ in range(5):
        assert admin_sign_in(client, "pat", "wrong").status_code == 200
    locked = admin_sign_in(client, "pat", RIGHT)
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Too many failed sign-ins. Try again in 15 minutes." in page
    assert 'name="password"' in page  # still the admin's sign-in form, not an error page
    assert "_auth_user_id" not in client.session


def test_failures_on_one_page_count_on_the_other(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 4
    client = Client()
    for _ in range(2):
        client.post("/accounts/login/", {"username": "pat", "password": "wrong"})
        admin_sign_in(client, "pat", "wrong")
    assert client.post("/accounts/login/", {"username": "pat", "password": RIGHT}).status_code == 429
    assert admin_sign_in(client, "pat", RIGHT).status_code == 429


def test_the_lockout_holds_for_one_username_from_one_address(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 3
    attacker = Client(REMOTE_ADDR="198.51.100.7")
    for _ in range(3):
        admin_sign_in(attacker, "pat", "wrong")
    assert admin_sign_in(attacker, "pat", RIGHT).status_code == 429
    # Case and blanks do not make a fresh account name to guess at.
    assert admin_sign_in(attacker, " PAT ", RIGHT).status_code == 429
    # The real user at their own desk is not locked out by someone else's guesses.
    assert admin_sign_in(Client(REMOTE_ADDR="192.0.2.10"), "pat", RIGHT).status_code == 302


def test_a_forged_forwarded_for_header_does_not_reset_the_count(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 3
    settings.PORTAL_TRUSTED_PROXIES = ["10.0.0.0/8"]  # the ingress controller's pods, which append what they saw
    client = Client(REMOTE_ADDR="10.0.0.5")  # the ingress pod
    for n in range(3):
        admin_sign_in(client, "pat", "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, 198.51.100.7")
    locked = admin_sign_in(client, "pat", RIGHT, HTTP_X_FORWARDED_FOR="203.0.113.99, 198.51.100.7")
    assert locked.status_code == 429
    other_client = admin_sign_in(client, "pat", RIGHT, HTTP_X_FORWARDED_FOR="192.0.2.10")
    assert other_client.status_code == 302


def test_the_lockout_ends_after_the_lockout_period(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 3
    settings.PORTAL_LOGIN_LOCKOUT_SECONDS = 600
    client = Client()
    for _ in range(3):
        admin_sign_in(client, "pat", "wrong")
    assert "Try again in 10 minutes" in admin_sign_in(client, "pat", RIGHT).content.decode()
    # Time passes: the last failure is now older than the lockout period.
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(seconds=601))
    assert admin_sign_in(client, "pat", RIGHT).status_code == 302


def test_no_password_is_kept_with_the_failed_attempts(platform_user):
    admin_sign_in(Client(), "pat", "my-guess-Xy12")
    attempt = AccessAttempt.objects.get()
    assert "my-guess-Xy12" not in attempt.post_data


def test_guessing_one_account_from_many_addresses_locks_that_account(platform_user, finance_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 5
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 6
    for n in range(3):  # two guesses from each of three addresses: no single address reaches 5
        for _ in range(2):
            admin_sign_in(Client(REMOTE_ADDR=f"198.51.100.{n}"), "pat", "wrong")
    assert AccessAttempt.objects.filter(username="pat").count() == 3
    # The account is now refused from a fresh address, the right password included, without checking it...
    assert admin_sign_in(Client(REMOTE_ADDR="192.0.2.10"), "pat", RIGHT).status_code == 429
    # ...and other accounts from those addresses are not.
    other = Client(REMOTE_ADDR="198.51.100.0").post("/accounts/login/", {"username": "fiona", "password": RIGHT})
    assert other.status_code == 302


def test_one_address_trying_many_accounts_is_locked_out(platform_user, settings, django_user_model):
    settings.PORTAL_LOGIN_MAX_FAILURES = 5
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = 4
    sprayer = Client(REMOTE_ADDR="198.51.100.7")
    for victim in ["alice", "bob", "carol", "dave"]:  # one guess per account: no account reaches a limit
        assert admin_sign_in(sprayer, victim, "Summer2026!").status_code == 200
    # A fifth account, even one whose password is right, is refused from that address...
    assert admin_sign_in(sprayer, "pat", RIGHT).status_code == 429
    # ...but not from another.
    assert admin_sign_in(Client(REMOTE_ADDR="192.0.2.10"), "pat", RIGHT).status_code == 302


def test_signing_in_to_ones_own_account_does_not_clear_the_addresss_other_failures(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = 5
    sprayer = Client(REMOTE_ADDR="198.51.100.7")
    for victim in ["alice", "bob", "carol"]:
        admin_sign_in(sprayer, victim, "Summer2026!")
    admin_sign_in(sprayer, "pat", "typo")  # four failures from the address
    # Axes would clear every failure from the address on this success; only pat's own are cleared.
    assert admin_sign_in(Client(REMOTE_ADDR="198.51.100.7"), "pat", RIGHT).status_code == 302
    assert sorted(AccessAttempt.objects.values_list("username", flat=True)) == ["alice", "bob", "carol"]
    for victim in ["dave", "erin"]:  # the three left and these two make five
        admin_sign_in(sprayer, victim, "Summer2026!")
    assert admin_sign_in(sprayer, "pat", RIGHT).status_code == 429


def test_zero_turns_the_wider_counts_off(platform_user, settings):
    settings.PORTAL_LOGIN_MAX_FAILURES = 3
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT = 0
    settings.PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS = 0
    for n in range(10):
        admin_sign_in(Client(REMOTE_ADDR=f"198.51.100.{n}"), "pat", "wrong")
    assert admin_sign_in(Client(REMOTE_ADDR="192.0.2.10"), "pat", RIGHT).status_code == 302


def chart_web_env() -> dict[str, str]:
    from deploy.helmlite import render_objects
    from tests.deploy.test_chart import CHART

    web = next(o for o in render_objects(CHART, release_name="portal") if o["metadata"]["name"] == "portal-web"
               and o["kind"] == "Deployment")
    return {e["name"]: e["value"] for e in web["spec"]["template"]["spec"]["containers"][0]["env"] if "value" in e}


def test_behind_the_ingress_one_address_cannot_lock_everyone_out(platform_user, finance_user, settings):
    """The chart's defaults, as the web pods get them: 50 failures for many accounts from one address behind the
    ingress lock nobody else out, and that address out of those accounts only."""
    settings.PORTAL_TRUSTED_PROXIES = chart_web_env()["PORTAL_TRUSTED_PROXIES"].split(",")
    ingress = Client(REMOTE_ADDR="10.42.0.17")  # every connection comes from the ingress controller's pod
    attacker = {"HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    for n in range(50):
        admin_sign_in(ingress, ["pat", "fiona", f"user{n}"][n % 3], "wrong", **attacker)
    assert admin_sign_in(ingress, "pat", RIGHT, **attacker).status_code == 429
    for user in ("pat", "fiona"):  # their owners, from their own addresses, through the same ingress
        own = Client(REMOTE_ADDR="10.42.0.17")
        assert admin_sign_in(own, user, RIGHT, HTTP_X_FORWARDED_FOR="192.0.2.10").status_code == 302, user


def test_a_forwarded_address_is_believed_only_from_a_trusted_proxy(platform_user, settings):
    from django.test import RequestFactory

    from portal.signin import client_address

    settings.PORTAL_TRUSTED_PROXIES = ["10.0.0.0/8"]
    seen = lambda remote, forwarded: client_address(RequestFactory().get(  # noqa: E731
        "/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded))
    assert seen("198.51.100.9", "192.0.2.10") == "198.51.100.9"  # straight from a client: the header is its own
    assert seen("10.0.0.5", "203.0.113.1, 192.0.2.10") == "192.0.2.10"  # the rightmost address no proxy wrote
    assert seen("10.0.0.5", "192.0.2.10, 10.0.0.7") == "192.0.2.10"  # two proxies in a row
    assert seen("10.0.0.5", "not-an-address") == "10.0.0.5"
    assert seen("10.0.0.5", "") == "10.0.0.5"

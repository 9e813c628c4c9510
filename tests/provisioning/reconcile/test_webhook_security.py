"""Team webhooks and the outbound policy: given team-a's engineer setting the webhook through the API, a stalled
gang is notified with a body the receiver can verify (HMAC-SHA256 over "timestamp.body" with the secret the team
was shown); URLs to loopback, link-local, private ranges or other schemes are refused when entered and again
when called, redirects are never followed, and the connection goes to the address that was checked."""
from __future__ import annotations

import hashlib
import hmac
import socket
import time

import pytest
from django.test import Client

from portal.models import Notice, Team
from provisioning.models import Cluster
from provisioning.reconcile import status_reconcile
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import minutes, pods_of
from tests.support.admin import change_form_data
from tests.support.webhook import RECEIVER_HOST, start_receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def east(inventory):
    return Cluster.objects.get(name="gpu-east")


@pytest.fixture
def deny_by_default(settings):
    """The production default: nothing local or private is called."""
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []
    settings.PORTAL_WEBHOOK_ALLOWED_NETWORKS = []


def stall(provision, east, django_capture_on_commit_callbacks):
    """A request whose gang stalls: 3 of 4 pods running, the fourth unschedulable; its notices are delivered."""
    gpu_request = provision()
    pods = pods_of(gpu_request)
    partial = [k8s.moved(p, k8s.running(p, f"gpu-h100-0{i}", minutes(1))) for i, p in enumerate(pods[:3])]
    partial.append(k8s.moved(pods[3], k8s.unschedulable(pods[3], minutes(0))))
    status_reconcile(cluster=east, pods=partial, now=minutes(10))
    with django_capture_on_commit_callbacks(execute=True):
        status_reconcile(cluster=east, pods=partial, now=minutes(16))
    return Notice.objects.get(channel="webhook")


def receiver_verifies(secret: str, header: str, raw: bytes, tolerance: int = 300) -> bool:
    """What a receiver does, written from the documentation alone (no portal code)."""
    parts = dict(item.split("=", 1) for item in header.split(","))
    timestamp = int(parts["t"])
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"]) and abs(time.time() - timestamp) <= tolerance


# -- signing -----------------------------------------------------------------------------------------------------


def test_the_team_sets_its_webhook_and_the_receiver_verifies_every_body(
    api, engineer, team_a, provision, east, webhook, eager_celery, django_capture_on_commit_callbacks
):
    response = api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": webhook.url}, format="json")
    assert response.status_code == 200, response.json()
    shown = response.json()
    assert shown["webhook_url"] == webhook.url and shown["signature_header"] == "X-Portal-Signature"
    secret = shown["webhook_secret"]
    assert secret.startswith("whsec_") and len(secret) > 40

    notice = stall(provision, east, django_capture_on_commit_callbacks)

    assert notice.status == "sent" and len(webhook.received) == 1
    hook = webhook.received[0]
    assert receiver_verifies(secret, hook.headers["X-Portal-Signature"], hook.raw)
    assert not receiver_verifies("whsec_someone-elses", hook.headers["X-Portal-Signature"], hook.raw)
    assert not receiver_verifies(secret, hook.headers["X-Portal-Signature"], hook.raw.replace(b"train", b"trair"))


def test_a_rotated_secret_signs_what_is_sent_next(
    api, engineer, team_a, provision, east, webhook, eager_celery, django_capture_on_commit_callbacks
):
    first = api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": webhook.url},
                              format="json").json()["webhook_secret"]
    rotated = api(engineer).post("/api/v1/teams/team-a/webhook/rotate-secret/").json()["webhook_secret"]
    assert rotated != first and api(engineer).get("/api/v1/teams/team-a/webhook/").json()["webhook_secret"] == rotated

    stall(provision, east, django_capture_on_commit_callbacks)

    hook = webhook.received[0]
    assert receiver_verifies(rotated, hook.headers["X-Portal-Signature"], hook.raw)
    assert not receiver_verifies(first, hook.headers["X-Portal-Signature"], hook.raw)


def test_the_secret_is_stored_encrypted(api, engineer, team_a, webhook):
    from django.db import connection

    secret = api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": webhook.url},
                               format="json").json()["webhook_secret"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT webhook_secret FROM portal_team WHERE slug = 'team-a'")
        assert secret not in cursor.fetchone()[0]


def test_only_the_team_and_the_platform_team_see_or_change_the_webhook(
    api, engineer, engineer_b, finance_user, platform_user, team_a, webhook
):
    url = "/api/v1/teams/team-a/webhook/"
    body = {"webhook_url": webhook.url}
    assert api().get(url).status_code == 401
    assert api(engineer_b).get(url).status_code == 404  # another team's: not even its existence
    assert api(engineer_b).put(url, body, format="json").status_code == 404
    assert api(finance_user).get(url).status_code == 403  # finance reads teams, not their secrets
    assert api(finance_user).put(url, body, format="json").status_code == 403
    assert api(finance_user).post(f"{url}rotate-secret/").status_code == 403
    assert api(platform_user).put(url, body, format="json").status_code == 200
    assert api(engineer).get(url).json()["webhook_secret"] == api(platform_user).get(url).json()["webhook_secret"]
    assert api(engineer).get("/api/v1/teams/no-such-team/webhook/").status_code == 404


# -- the outbound policy, at input time --------------------------------------------------------------------------


@pytest.mark.parametrize("url, reason", [
    ("http://169.254.169.254/latest/meta-data/iam/", "169.254.169.254"),
    ("http://localhost:8080/hook", "127.0.0.1"),
    ("http://127.0.0.1/hook", "127.0.0.1"),
    ("http://[::1]/hook", "::1"),
    ("http://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1"),
    ("https://10.1.2.3/hook", "10.1.2.3"),
    ("https://192.168.0.10/hook", "192.168.0.10"),
    ("http://0.0.0.0/hook", "0.0.0.0"),
    ("ftp://203.0.113.10/hook", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
    ("https://user:pw@hooks.example/x", "user name or password"),
    ("not a url", "Enter a valid URL"),
    # IPv6 forms of blocked IPv4 addresses: compatible, mapped (hex), 6to4, NAT64, Teredo (client 169.254.1.1).
    ("http://[::a9fe:a9fe]/", "::a9fe:a9fe"),
    ("http://[::ffff:a9fe:a9fe]/", "169.254.169.254"),
    ("http://[::127.0.0.1]/", "::7f00:1"),
    ("http://[2002:a9fe:a9fe::1]/", "2002:a9fe:a9fe::1"),
    ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe"),
    ("http://[2001:0:4136:e378:8000:63bf:5601:fefe]/", "2001:0:4136:e378:8000:63bf:5601:fefe"),
])  # fmt: skip
def test_a_webhook_url_the_portal_would_not_call_is_a_field_error(api, engineer, team_a, deny_by_default, url,
                                                                  reason):
    response = api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": url}, format="json")

    assert response.status_code == 400, response.json()
    assert list(response.json()) == ["webhook_url"] and any(reason in m for m in response.json()["webhook_url"])
    assert Team.objects.get(slug="team-a").webhook_url == ""


def test_the_webhook_allow_list_admits_an_on_premises_range_and_the_deny_list_wins(api, engineer, team_a,
                                                                                   settings):
    settings.PORTAL_WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    put = lambda url: api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": url}, format="json")  # noqa: E731

    assert put("https://10.20.1.1/hook").status_code == 200
    assert put("https://[::ffff:10.20.1.1]/hook").status_code == 200  # the same address, written as IPv6
    assert put("https://10.21.1.1/hook").status_code == 400
    settings.PORTAL_OUTBOUND_DENIED_NETWORKS = ["10.20.1.0/24"]
    assert put("https://10.20.1.1/hook").status_code == 400


@pytest.mark.parametrize("url", ["http://127.0.0.1:18712/", "http://[::1]/", "http://169.254.169.254/",
                                 "http://[::a9fe:a9fe]/", "http://[fd00:ec2::254]/", "http://100.100.100.200/",
                                 "http://[fe80::1]/", "http://224.0.0.1/"])
def test_no_setting_lets_a_webhook_reach_loopback_link_local_or_metadata(api, engineer, team_a, settings, url):
    """The clusters' list allows loopback for an on-premises API server (here: every fake API server of the tests
    listens on 127.0.0.1); a webhook is refused all the same, even with its own list wide open."""
    assert "127.0.0.0/8" in settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS
    settings.PORTAL_WEBHOOK_ALLOWED_NETWORKS = ["0.0.0.0/0", "::/0"]

    response = api(engineer).put("/api/v1/teams/team-a/webhook/", {"webhook_url": url}, format="json")

    assert response.status_code == 400 and "never calls a loopback, link-local" in response.json()["webhook_url"][0]


def test_a_bad_webhook_url_in_the_admin_is_a_field_error(team_a, platform_user, deny_by_default):
    client = Client()
    client.force_login(platform_user)
    url = f"/admin/portal/team/{team_a.pk}/change/"

    response = client.post(url, change_form_data(client.get(url), webhook_url="http://169.254.169.254/"))

    assert response.status_code == 200
    assert "169.254.169.254" in response.context["adminform"].form.errors["webhook_url"][0]
    assert Team.objects.get(pk=team_a.pk).webhook_url == ""


def test_a_webhook_set_in_the_admin_gets_a_secret(team_a, platform_user, webhook):
    client = Client()
    client.force_login(platform_user)
    url = f"/admin/portal/team/{team_a.pk}/change/"

    page = client.get(url)
    assert "webhook_secret" not in page.content.decode()  # shown through the API only
    client.post(url, change_form_data(page, webhook_url=webhook.url))

    team = Team.objects.get(pk=team_a.pk)
    assert team.webhook_url == webhook.url and team.webhook_secret.startswith("whsec_")


# -- and at call time --------------------------------------------------------------------------------------------


def test_a_url_denied_since_it_was_entered_is_not_called(
    team_a, provision, east, webhook, eager_celery, settings, django_capture_on_commit_callbacks
):
    Team.objects.filter(pk=team_a.pk).update(webhook_url=webhook.url)  # accepted while its address was allowed
    settings.PORTAL_WEBHOOK_ALLOWED_NETWORKS = []

    notice = stall(provision, east, django_capture_on_commit_callbacks)

    assert notice.status == "failed" and "not called" in notice.message and RECEIVER_HOST in notice.message
    assert webhook.received == []


def test_a_loopback_webhook_stored_before_is_not_called_whatever_the_cluster_list_says(
    team_a, provision, east, eager_celery, django_capture_on_commit_callbacks
):
    loopback = start_receiver(host="127.0.0.1")
    try:
        Team.objects.filter(pk=team_a.pk).update(webhook_url=loopback.url)

        notice = stall(provision, east, django_capture_on_commit_callbacks)

        assert notice.status == "failed" and "never calls a loopback" in notice.message
        assert loopback.received == []
    finally:
        loopback.server.shutdown()
        loopback.server.server_close()


def test_redirects_are_not_followed(team_a, provision, east, webhook, eager_celery,
                                    django_capture_on_commit_callbacks):
    elsewhere = start_receiver()
    try:
        webhook.answers, webhook.location = [302], elsewhere.url
        Team.objects.filter(pk=team_a.pk).update(webhook_url=webhook.url)

        notice = stall(provision, east, django_capture_on_commit_callbacks)

        assert notice.status == "failed" and "redirect" in notice.message
        assert len(webhook.received) == 1 and elsewhere.received == []
    finally:
        elsewhere.server.shutdown()
        elsewhere.server.server_close()


def test_the_connection_goes_to_the_address_that_was_checked(
    team_a, provision, east, webhook, eager_celery, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """DNS rebinding: the name resolves to an allowed address when checked and to another one afterwards."""
    port = webhook.server.server_address[1]
    answers = iter([RECEIVER_HOST])  # the first lookup; every later one answers 127.0.0.2
    lookups = []
    real_getaddrinfo = socket.getaddrinfo

    def rebinding_dns(host, *args, **kwargs):
        if host != "hooks.rebind.test":
            return real_getaddrinfo(host, *args, **kwargs)
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers, "127.0.0.2"), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    Team.objects.filter(pk=team_a.pk).update(webhook_url=f"http://hooks.rebind.test:{port}/hooks/gpu")

    notice = stall(provision, east, django_capture_on_commit_callbacks)

    assert notice.status == "sent" and len(webhook.received) == 1
    assert webhook.received[0].headers["Host"] == f"hooks.rebind.test:{port}"
    assert lookups == ["hooks.rebind.test"]  # resolved once, by the check; the connection used that answer

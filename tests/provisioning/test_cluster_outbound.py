"""A cluster's API server URL and the outbound policy: refused when entered and again when called, a redirect
never followed, the connection made to the address that was checked; and a failed sync's detail (which can quote
whatever answered at that URL) shown to the platform team only."""
from __future__ import annotations

import socket
from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command

from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster
from provisioning.selectors import SYNC_FAILED_FOR_OTHERS
from kubesim.server import FakeKubeAPI

pytestmark = pytest.mark.django_db


def register(server: str, ca_file: str) -> Cluster:
    call_command("register_cluster", "gpu-east", "--server", server, "--token", "test-token",
                 "--ca-cert-file", ca_file, stdout=StringIO(), stderr=StringIO())
    return Cluster.objects.get(name="gpu-east")


@pytest.mark.parametrize("server", ["https://169.254.169.254", "https://127.0.0.1:6443", "https://[fd00::1]:6443",
                                    "https://localhost:6443"])
def test_a_denied_api_server_is_refused_when_registered(inventory, fake_kube, settings, server):
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(CommandError, match="api_server: .*PORTAL_OUTBOUND_ALLOWED_NETWORKS"):
        register(server, fake_kube.ca_file)


def test_a_non_http_api_server_is_refused(inventory, fake_kube):
    with pytest.raises(CommandError, match="api_server: "):
        register("ftp://127.0.0.1:6443", fake_kube.ca_file)


def test_an_api_server_denied_since_it_was_registered_is_not_called(inventory, fake_kube, settings):
    east = register(fake_kube.url, fake_kube.ca_file)  # on-premises range allowed at the time
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []

    outcome = inventory_sync(cluster=east)

    assert outcome.status == "failed" and "is not called" in outcome.message
    assert fake_kube.requests == []


def test_a_redirect_from_the_api_server_is_not_followed(inventory, fake_kube):
    east = register(fake_kube.url, fake_kube.ca_file)
    with FakeKubeAPI.start() as elsewhere:
        fake_kube.fail_next("GET", r"^/version", 302, body={}, headers={"Location": f"{elsewhere.url}/version"})

        outcome = inventory_sync(cluster=east)

        assert outcome.status == "failed"
        assert elsewhere.requests == []


def test_the_api_server_connection_goes_to_the_address_that_was_checked(inventory, fake_kube, settings,
                                                                       monkeypatch):
    """DNS rebinding: `localhost` (a name in the fake's certificate) answers 127.0.0.1 to the checks, then
    127.0.0.2, where nothing listens."""
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    port = urlsplit(fake_kube.url).port
    answers = iter(["127.0.0.1", "127.0.0.1"])  # the check when registered, the check when called
    lookups = []
    real_getaddrinfo = socket.getaddrinfo

    def rebinding_dns(host, *args, **kwargs):
        if host != "localhost":
            return real_getaddrinfo(host, *args, **kwargs)
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers, "127.0.0.2"), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    east = register(f"https://localhost:{port}", fake_kube.ca_file)

    outcome = inventory_sync(cluster=east)

    assert outcome.status == "synced", outcome.message  # TLS verified against "localhost", connected to 127.0.0.1
    assert len(lookups) == 2 and fake_kube.requests


def test_engineers_see_a_generic_sync_error_and_the_platform_team_the_detail(
    inventory, fake_kube, api, engineer, finance_user, platform_user
):
    east = register(fake_kube.url, fake_kube.ca_file)
    fake_kube.fail_next("GET", r"^/api/v1/nodes", 500, message="etcd at 10.0.3.7:2379: connection refused")
    assert inventory_sync(cluster=east).status == "failed"

    for user in (engineer, finance_user):
        detail = api(user).get(f"/api/v1/clusters/{east.pk}/").json()
        listed = next(c for c in api(user).get("/api/v1/clusters/").json()["results"] if c["id"] == east.pk)
        assert detail["last_sync_error"] == listed["last_sync_error"] == SYNC_FAILED_FOR_OTHERS
    detail = api(platform_user).get(f"/api/v1/clusters/{east.pk}/").json()
    assert "etcd at 10.0.3.7:2379" in detail["last_sync_error"]


def test_everyone_reads_the_note_on_a_cluster_without_an_api_server(inventory, api, engineer):
    west = inventory[1]
    inventory_sync(cluster=west)

    body = api(engineer).get(f"/api/v1/clusters/{west.pk}/").json()

    assert body["last_sync_error"].startswith("No API server: gpu-west")

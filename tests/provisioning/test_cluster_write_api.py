"""The platform team changes a cluster and its credentials through the API: a new API server is checked (a
field-level 400 when refused) and clears the credentials given for the old one; credentials are accepted for the
current server only, need TLS, and are never answered back. Nobody else changes anything."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, ClusterCredential
from kubesim.server import FakeKubeAPI

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-service-account-token"


@pytest.fixture
def east(inventory, fake_kube):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", TOKEN,
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    return Cluster.objects.get(name="gpu-east")


def test_a_new_api_server_through_the_api_clears_the_token(api, platform_user, east):
    with FakeKubeAPI.start() as attacker:
        response = api(platform_user).patch(f"/api/v1/clusters/{east.pk}/", {"api_server": attacker.url},
                                            format="json")

        assert response.status_code == 200, response.json()
        assert ClusterCredential.objects.get(cluster=east).token == ""
        assert inventory_sync(cluster=Cluster.objects.get(pk=east.pk)).status == "failed"
        assert not [r for r in attacker.requests if TOKEN in r.headers.get("Authorization", "")]


def test_other_changes_keep_the_credentials(api, platform_user, east):
    response = api(platform_user).patch(f"/api/v1/clusters/{east.pk}/", {"description": "east, rack 4"},
                                        format="json")

    assert response.status_code == 200 and response.json()["description"] == "east, rack 4"
    assert ClusterCredential.objects.get(cluster=east).token == TOKEN


@pytest.mark.parametrize("server", ["https://169.254.169.254/", "ftp://127.0.0.1/", "https://10.0.0.1:6443"])
def test_a_refused_api_server_is_a_field_error(api, platform_user, east, settings, server):
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []

    response = api(platform_user).patch(f"/api/v1/clusters/{east.pk}/", {"api_server": server}, format="json")

    assert response.status_code == 400 and list(response.json()) == ["api_server"]
    assert Cluster.objects.get(pk=east.pk).api_server == east.api_server


def test_only_the_platform_team_changes_clusters(api, engineer, finance_user, east):
    for user in (engineer, finance_user):
        patch = api(user).patch(f"/api/v1/clusters/{east.pk}/", {"api_server": "https://203.0.113.9"},
                                format="json")
        put = api(user).put(f"/api/v1/clusters/{east.pk}/credentials/", {"token": "mine"}, format="json")
        assert (patch.status_code, put.status_code) == (403, 403)
    assert Cluster.objects.get(pk=east.pk).api_server == east.api_server
    assert ClusterCredential.objects.get(cluster=east).token == TOKEN


def test_credentials_set_through_the_api_are_confirmed_for_the_new_server_and_never_shown(
    api, platform_user, east
):
    with FakeKubeAPI.start() as moved:
        api(platform_user).patch(f"/api/v1/clusters/{east.pk}/", {"api_server": moved.url}, format="json")

        response = api(platform_user).put(f"/api/v1/clusters/{east.pk}/credentials/",
                                          {"token": "new-token", "ca_cert": moved.ca_pem}, format="json")

        assert response.status_code == 200, response.json()
        assert response.json()["server"] == moved.url and response.json()["has_token"] is True
        assert "new-token" not in response.content.decode()
        assert inventory_sync(cluster=Cluster.objects.get(pk=east.pk)).status == "synced"
        assert {r.headers["Authorization"] for r in moved.requests} == {"Bearer new-token"}


def test_credentials_without_tls_verification_are_refused_by_field(api, platform_user, east):
    url = f"/api/v1/clusters/{east.pk}/credentials/"

    no_ca = api(platform_user).put(url, {"token": "t", "ca_cert": ""}, format="json")
    no_token = api(platform_user).put(url, {"token": "", "ca_cert": "pem"}, format="json")
    bad_source = api(platform_user).put(url, {"source": "magic"}, format="json")

    assert no_ca.status_code == 400 and list(no_ca.json()) == ["ca_cert"]
    assert no_token.status_code == 400 and list(no_token.json()) == ["token"]
    assert bad_source.status_code == 400 and list(bad_source.json()) == ["source"]
    assert ClusterCredential.objects.get(cluster=east).token == TOKEN  # nothing changed

"""Cluster credentials at rest and on the move: given a cluster registered against the fake API server, its token
is not readable in the database, survives a key rotation, and never follows the cluster to another API server,
whichever way the URL is changed (admin, register_cluster, declare_clusters, or behind the portal's back)."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, ClusterCredential
from kubesim.server import FakeKubeAPI
from tests.support.admin import change_form_data

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-service-account-token"


@pytest.fixture
def keys(settings):
    """A known first key (instead of the development key derived from SECRET_KEY)."""
    settings.PORTAL_CREDENTIAL_KEYS = [Fernet.generate_key().decode()]
    return settings


@pytest.fixture
def east(inventory, fake_kube, keys):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", TOKEN,
                 "--ca-cert-file", fake_kube.ca_file, stdout=StringIO())
    return Cluster.objects.get(name="gpu-east")


@pytest.fixture
def attacker():
    """Another API server (with a certificate the portal trusts: verification alone does not protect the token)."""
    with FakeKubeAPI.start() as fake:
        yield fake


def bearers(fake) -> set[str]:
    return {r.headers.get("Authorization", "") for r in fake.requests}


def stored_token_column(cluster) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT token FROM provisioning_clustercredential WHERE cluster_id = %s", [cluster.pk])
        return cursor.fetchone()[0]


def test_the_token_is_encrypted_in_the_database_and_still_authenticates(east, fake_kube):
    column = stored_token_column(east)

    assert TOKEN not in column and column.startswith("gAAAA")  # a Fernet token
    assert inventory_sync(cluster=east).status == "synced"
    assert bearers(fake_kube) == {f"Bearer {TOKEN}"}


def test_rotation_re_encrypts_with_the_first_key_so_the_old_key_can_go(east, fake_kube, keys):
    old_key = keys.PORTAL_CREDENTIAL_KEYS[0]
    new_key = Fernet.generate_key().decode()
    before = stored_token_column(east)
    keys.PORTAL_CREDENTIAL_KEYS = [new_key, old_key]  # new first: it writes, both read

    out = StringIO()
    call_command("rotate_credential_keys", stdout=out)

    assert "1 stored secrets re-encrypted" in out.getvalue()
    assert stored_token_column(east) != before
    keys.PORTAL_CREDENTIAL_KEYS = [new_key]  # the old key removed
    assert ClusterCredential.objects.get(cluster=east).token == TOKEN
    assert inventory_sync(cluster=east).status == "synced"
    assert bearers(fake_kube) == {f"Bearer {TOKEN}"}


def test_rotation_refuses_when_a_secret_cannot_be_read_and_changes_nothing(east, keys):
    before = stored_token_column(east)
    keys.PORTAL_CREDENTIAL_KEYS = [Fernet.generate_key().decode()]  # the writing key was dropped too early

    with pytest.raises(CommandError, match="cannot be decrypted with any key"):
        call_command("rotate_credential_keys", stdout=StringIO())

    assert stored_token_column(east) == before


def test_the_admin_action_re_encrypts_too(east, keys, platform_user):
    old_key, new_key = keys.PORTAL_CREDENTIAL_KEYS[0], Fernet.generate_key().decode()
    keys.PORTAL_CREDENTIAL_KEYS = [new_key, old_key]
    client = Client()
    client.force_login(platform_user)

    page = client.post("/admin/provisioning/cluster/", {"action": "reencrypt_credentials",
                                                        "_selected_action": [east.pk]}, follow=True)

    assert "1 stored secrets re-encrypted with the first key." in page.content.decode()
    keys.PORTAL_CREDENTIAL_KEYS = [new_key]
    assert ClusterCredential.objects.get(cluster=east).token == TOKEN


def test_repointing_the_cluster_in_the_admin_clears_the_token(east, fake_kube, attacker, platform_user):
    client = Client()
    client.force_login(platform_user)
    url = f"/admin/provisioning/cluster/{east.pk}/change/"

    response = client.post(url, change_form_data(client.get(url), api_server=attacker.url), follow=True)

    assert response.status_code == 200 and "its credentials were cleared" in response.content.decode()
    assert Cluster.objects.get(pk=east.pk).api_server == attacker.url
    assert ClusterCredential.objects.get(cluster=east).token == ""
    outcome = inventory_sync(cluster=Cluster.objects.get(pk=east.pk))
    assert outcome.status == "failed" and "no credentials for" in outcome.message
    assert f"Bearer {TOKEN}" not in bearers(attacker)


def test_a_bad_api_server_in_the_admin_is_a_field_error(east, platform_user, settings):
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []
    client = Client()
    client.force_login(platform_user)
    url = f"/admin/provisioning/cluster/{east.pk}/change/"

    response = client.post(url, change_form_data(client.get(url), api_server="https://169.254.169.254/"))

    assert response.status_code == 200  # the form again, with the error on the field
    errors = response.context["adminform"].form.errors
    assert "api_server" in errors and "169.254.169.254" in errors["api_server"][0]
    assert Cluster.objects.get(pk=east.pk).api_server != "https://169.254.169.254/"


def test_register_cluster_with_a_new_server_and_no_token_clears_the_old_one(east, attacker):
    err = StringIO()
    call_command("register_cluster", "gpu-east", "--server", attacker.url, stdout=StringIO(), stderr=err)

    assert "credentials were cleared" in err.getvalue()
    outcome = inventory_sync(cluster=Cluster.objects.get(pk=east.pk))
    assert outcome.status == "failed"
    assert f"Bearer {TOKEN}" not in bearers(attacker)


def test_register_cluster_with_a_new_server_and_its_own_token_confirms_it(east, attacker):
    call_command("register_cluster", "gpu-east", "--server", attacker.url, "--token", "for-the-new-one",
                 "--ca-cert-file", attacker.ca_file, stdout=StringIO())

    assert inventory_sync(cluster=Cluster.objects.get(pk=east.pk)).status == "synced"
    assert bearers(attacker) == {"Bearer for-the-new-one"}


def test_declare_clusters_repointing_a_cluster_clears_its_token(east, attacker, tmp_path):
    spec = tmp_path / "clusters.json"
    spec.write_text(json.dumps([{"name": "gpu-east", "applier": "kubernetes", "api_server": attacker.url,
                                 "pools": []}]))

    call_command("declare_clusters", str(spec), stdout=StringIO())

    assert ClusterCredential.objects.get(cluster=east).token == ""
    assert inventory_sync(cluster=Cluster.objects.get(pk=east.pk)).status == "failed"
    assert f"Bearer {TOKEN}" not in bearers(attacker)


def test_declare_clusters_rejects_a_denied_api_server(east, settings, tmp_path):
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []
    spec = tmp_path / "clusters.json"
    spec.write_text(json.dumps([{"name": "gpu-east", "api_server": "https://127.0.0.1:6443", "pools": []}]))

    with pytest.raises(CommandError, match="api_server: .*127.0.0.1"):
        call_command("declare_clusters", str(spec), stdout=StringIO())


def test_a_url_changed_behind_the_portals_back_still_gets_no_token(east, attacker):
    Cluster.objects.filter(pk=east.pk).update(api_server=attacker.url)  # no write path: a raw UPDATE

    outcome = inventory_sync(cluster=Cluster.objects.get(pk=east.pk))

    assert outcome.status == "failed" and "were given for" in outcome.message
    assert attacker.requests == []

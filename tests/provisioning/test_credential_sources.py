"""How the portal reaches a cluster: TLS verified against the cluster's CA (plain http and skipped verification
only when asked for, and logged), and the three ways to avoid a stored token: the pod's own service account (its
token file re-read as the kubelet rotates it), a kubeconfig file, and a Secret read with the pod's identity."""
from __future__ import annotations

import base64
import logging
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster, ClusterCredential
from kubesim.server import FakeKubeAPI
from kubesim.tls import make_ca

pytestmark = pytest.mark.django_db


def bearers(fake) -> set[str]:
    return {r.headers.get("Authorization", "") for r in fake.requests}


def register(*args: str) -> Cluster:
    call_command("register_cluster", "gpu-east", *args, stdout=StringIO(), stderr=StringIO())
    return Cluster.objects.get(name="gpu-east")


# -- TLS ---------------------------------------------------------------------------------------------------------


def test_https_without_a_ca_bundle_is_refused(inventory, fake_kube):
    with pytest.raises(CommandError, match="ca_cert: Give the API server's CA bundle"):
        register("--server", fake_kube.url, "--token", "t")


def test_plain_http_is_refused_unless_verification_is_skipped_on_purpose(inventory):
    with FakeKubeAPI.start(tls=False) as plain:
        with pytest.raises(CommandError, match="api_server: Use an https URL"):
            register("--server", plain.url, "--token", "t")


def test_the_servers_certificate_is_verified_against_the_given_ca(inventory, fake_kube, tmp_path):
    other_ca = make_ca(tmp_path, common_name="someone else's CA")
    east = register("--server", fake_kube.url, "--token", "t", "--ca-cert-file", other_ca.ca_file)

    outcome = inventory_sync(cluster=east)

    assert outcome.status == "failed" and "CERTIFICATE_VERIFY_FAILED" in outcome.message
    assert fake_kube.requests == []  # the handshake failed: no request, no token, was sent


def test_skipping_verification_is_explicit_and_logged(inventory, caplog):
    with FakeKubeAPI.start(tls=False) as plain, caplog.at_level(logging.WARNING):
        err = StringIO()
        call_command("register_cluster", "gpu-east", "--server", plain.url, "--token", "t",
                     "--insecure-skip-tls-verify", stdout=StringIO(), stderr=err)
        east = Cluster.objects.get(name="gpu-east")

        assert inventory_sync(cluster=east).status == "synced"

    assert "TLS verification is skipped for cluster gpu-east" in err.getvalue()
    assert any("TLS verification" in r.getMessage() and "gpu-east" in r.getMessage() for r in caplog.records)
    assert any("TLS verification is off" in r.getMessage() for r in caplog.records)  # on every connection


# -- the pod's own service account -------------------------------------------------------------------------------


@pytest.fixture
def pod_identity(tmp_path, fake_kube, settings):
    """The files the kubelet projects into the portal's pod, with the fake as the pod's own API server."""
    token_file, ca_file = tmp_path / "token", tmp_path / "ca.crt"
    token_file.write_text("pod-token-1\n")
    ca_file.write_text(fake_kube.ca_pem)
    settings.PORTAL_IN_CLUSTER_SERVER = fake_kube.url
    settings.PORTAL_IN_CLUSTER_TOKEN_FILE, settings.PORTAL_IN_CLUSTER_CA_FILE = str(token_file), str(ca_file)
    return token_file


def test_in_cluster_identity_reads_the_token_file_as_it_rotates(inventory, fake_kube, pod_identity):
    east = register("--in-cluster")
    assert east.api_server == fake_kube.url
    assert ClusterCredential.objects.get(cluster=east).token == ""  # nothing stored

    assert inventory_sync(cluster=east).status == "synced"
    assert bearers(fake_kube) == {"Bearer pod-token-1"}

    pod_identity.write_text("pod-token-2\n")  # the kubelet rotated it
    before = len(fake_kube.requests)
    assert inventory_sync(cluster=east).status == "synced"
    assert {r.headers["Authorization"] for r in fake_kube.requests[before:]} == {"Bearer pod-token-2"}


def test_the_token_file_is_read_before_every_request_of_one_connection(fake_kube, pod_identity, settings):
    from provisioning.kube.client import KubeClient
    from provisioning.kube.reads import list_pods
    from provisioning.kube.sources import in_cluster_connection

    identity = in_cluster_connection(server=fake_kube.url, token_file=str(pod_identity),
                                     ca_file=settings.PORTAL_IN_CLUSTER_CA_FILE, request_timeout=2)
    with KubeClient(identity) as kube:
        list_pods(kube, label_selector="a=b")
        pod_identity.write_text("pod-token-2\n")
        before = len(fake_kube.requests)
        list_pods(kube, label_selector="a=b")

    assert {r.headers["Authorization"] for r in fake_kube.requests[before:]} == {"Bearer pod-token-2"}


def test_in_cluster_outside_a_pod_says_so(inventory, settings):
    settings.PORTAL_IN_CLUSTER_SERVER = ""
    with pytest.raises(CommandError, match="not running in a pod"):
        register("--in-cluster")


# -- a kubeconfig file -------------------------------------------------------------------------------------------


def write_kubeconfig(path: Path, fake, *, token: str = "kubeconfig-token", ca_inline: bool = False) -> Path:
    cluster = {"server": fake.url}
    if ca_inline:
        cluster["certificate-authority-data"] = base64.b64encode(fake.ca_pem.encode()).decode()
    else:
        (path.parent / "ca.pem").write_text(fake.ca_pem)
        cluster["certificate-authority"] = "ca.pem"  # relative to the kubeconfig
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "east", "cluster": cluster}, {"name": "elsewhere", "cluster": {"server": "https://x"}}],
        "users": [{"name": "portal", "user": {"token": token}}],
        "contexts": [{"name": "east-admin", "context": {"cluster": "east", "user": "portal"}},
                     {"name": "other", "context": {"cluster": "elsewhere", "user": "portal"}}],
    }))  # fmt: skip
    return path


@pytest.mark.parametrize("ca_inline", [False, True])
def test_a_kubeconfig_context_gives_server_ca_and_token(inventory, fake_kube, tmp_path, ca_inline):
    kubeconfig = write_kubeconfig(tmp_path / "config", fake_kube, ca_inline=ca_inline)

    east = register("--kubeconfig", str(kubeconfig), "--context", "east-admin")

    assert east.api_server == fake_kube.url  # taken from the context
    assert ClusterCredential.objects.get(cluster=east).token == ""
    assert inventory_sync(cluster=east).status == "synced"
    assert bearers(fake_kube) == {"Bearer kubeconfig-token"}


def test_a_kubeconfig_edited_to_point_elsewhere_is_not_followed(inventory, fake_kube, tmp_path):
    kubeconfig = write_kubeconfig(tmp_path / "config", fake_kube)
    east = register("--kubeconfig", str(kubeconfig), "--context", "east-admin")
    with FakeKubeAPI.start() as elsewhere:
        write_kubeconfig(kubeconfig, elsewhere)

        outcome = inventory_sync(cluster=east)

        assert outcome.status == "failed" and "now points at" in outcome.message
        assert elsewhere.requests == []


def test_a_kubeconfig_user_with_an_exec_plugin_is_refused_with_a_reason(inventory, fake_kube, tmp_path):
    kubeconfig = write_kubeconfig(tmp_path / "config", fake_kube)
    config = yaml.safe_load(kubeconfig.read_text())
    config["users"][0]["user"] = {"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1"}}
    kubeconfig.write_text(yaml.safe_dump(config))

    with pytest.raises(CommandError, match="context east-admin authenticates with exec, which the portal does not"):
        register("--kubeconfig", str(kubeconfig), "--context", "east-admin")


# -- a Secret read with the pod's identity -----------------------------------------------------------------------


def test_a_token_in_a_secret_is_read_with_the_pods_identity(inventory, fake_kube, pod_identity):
    with FakeKubeAPI.start() as target:
        fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-portal"}})
        fake_kube.put({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "east-token", "namespace": "gpu-portal"},
            "type": "kubernetes.io/service-account-token",
            "data": {"token": base64.b64encode(b"from-the-secret").decode(),
                     "ca.crt": base64.b64encode(target.ca_pem.encode()).decode()},
        })  # fmt: skip

        east = register("--server", target.url, "--secret", "gpu-portal/east-token")

        assert ClusterCredential.objects.get(cluster=east).token == ""
        assert inventory_sync(cluster=east).status == "synced"
        assert bearers(target) == {"Bearer from-the-secret"}  # the Secret's token, verified with its ca.crt
        secret_reads = [r for r in fake_kube.requests if r.path.endswith("/secrets/east-token")]
        assert secret_reads and {r.headers["Authorization"] for r in secret_reads} == {"Bearer pod-token-1"}


def test_a_missing_secret_key_is_a_clear_failure(inventory, fake_kube, pod_identity):
    fake_kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-portal"}})
    fake_kube.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "east-token", "namespace": "gpu-portal"},
                   "data": {"other": base64.b64encode(b"x").decode()}})
    east = register("--server", fake_kube.url, "--secret", "gpu-portal/east-token", "--ca-cert-file",
                    fake_kube.ca_file)

    outcome = inventory_sync(cluster=east)

    assert outcome.status == "failed" and "has no key 'token'" in outcome.message

"""Cluster credentials: setting them and binding them to an API server URL (`provisioning.kube.connection` turns
them into a connection).

Credentials are bound to the URL they were given for (`ClusterCredential.server`). Every write path that changes
a cluster's `api_server` (admin, `register_cluster`, `declare_clusters`) calls `cluster_server_changed`, which
drops a stored token and unbinds the rest; and `cluster_connection` refuses credentials bound to another URL, so
a path that forgot (or a raw UPDATE) still cannot send a token to a new host. The URL is checked against the
outbound policy (portal.outbound) when entered and again there, and the connection is pinned to the checked address.
"""
from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import transaction

from portal.errors import PermissionDenied
from portal.models import Team
from portal.roles import is_platform

from .choices import CredentialSource
from .models import Cluster, ClusterCredential

logger = logging.getLogger(__name__)


def _transport_errors(*, server: str, source: str, ca_cert: str, insecure: bool) -> dict[str, list[str]]:
    """https with a CA bundle, unless verification is skipped on purpose (the only way to use plain http)."""
    if insecure or source in (CredentialSource.IN_CLUSTER, CredentialSource.KUBECONFIG):
        return {}  # the pod's CA and the kubeconfig's CA come with the source
    errors = {}
    if not server.lower().startswith("https://"):
        errors["api_server"] = ["Use an https URL; plain http needs insecure_skip_tls_verify."]
    elif not ca_cert.strip() and source == CredentialSource.TOKEN:  # a Secret may carry its ca.crt
        errors["ca_cert"] = ["Give the API server's CA bundle (PEM), or skip TLS verification explicitly."]
    return errors


def _source_errors(*, source: str, token: str, kubeconfig_path: str, secret_namespace: str,
                   secret_name: str, secret_key: str) -> dict[str, list[str]]:
    if source == CredentialSource.TOKEN and not token:
        return {"token": ["Give the service-account token, or choose another credential source."]}
    if source == CredentialSource.KUBECONFIG and not kubeconfig_path:
        return {"kubeconfig_path": ["Name the kubeconfig file."]}
    if source == CredentialSource.SECRET and not (secret_namespace and secret_name and secret_key):
        return {"secret_name": ["Name the Secret's namespace, name and key."]}
    return {}


@transaction.atomic
def cluster_credentials_set(
    *,
    cluster: Cluster,
    source: str = CredentialSource.TOKEN,
    token: str | None = None,
    ca_cert: str | None = None,
    insecure_skip_tls_verify: bool = False,
    kubeconfig_path: str = "",
    kubeconfig_context: str = "",
    secret_namespace: str = "",
    secret_name: str = "",
    secret_key: str = "token",
) -> ClusterCredential:
    """Set how the portal authenticates to `cluster`, confirmed for its current `api_server`. `token`/`ca_cert`
    None keep the stored ones when the server did not change. Raises ValidationError naming the field."""
    credential = ClusterCredential.objects.select_for_update().filter(cluster=cluster).first()
    credential = credential or ClusterCredential(cluster=cluster)
    same_server = credential.server == cluster.api_server
    token = token if token is not None else (credential.token if same_server else "")
    ca_cert = ca_cert if ca_cert is not None else (credential.ca_cert if same_server else "")
    if source != CredentialSource.TOKEN:
        token = ""  # nothing stored that is not used
    errors = _source_errors(source=source, token=token, kubeconfig_path=kubeconfig_path,
                            secret_namespace=secret_namespace, secret_name=secret_name, secret_key=secret_key)
    errors |= _transport_errors(server=cluster.api_server, source=source, ca_cert=ca_cert,
                                insecure=insecure_skip_tls_verify)
    if errors:
        raise ValidationError(errors)
    if insecure_skip_tls_verify:
        logger.warning("cluster %s: TLS verification of %s is skipped (insecure_skip_tls_verify)",
                       cluster.name, cluster.api_server)
    credential.source, credential.server, credential.token, credential.ca_cert = (
        source, cluster.api_server, token, ca_cert)
    credential.insecure_skip_tls_verify = insecure_skip_tls_verify
    credential.kubeconfig_path, credential.kubeconfig_context = kubeconfig_path, kubeconfig_context
    credential.secret_namespace, credential.secret_name, credential.secret_key = (
        secret_namespace, secret_name, secret_key)
    credential.full_clean(exclude=["cluster"])
    credential.save()
    return credential


def _check_platform(user) -> None:
    if not is_platform(user):
        raise PermissionDenied("Only the platform team changes clusters and their credentials.")


def cluster_credentials_put(*, user, cluster: Cluster, **credentials) -> ClusterCredential:
    """`cluster_credentials_set` for the platform team, on a cluster that has an API server."""
    _check_platform(user)
    if not cluster.api_server:
        raise ValidationError({"api_server": ["Set the cluster's API server before its credentials."]})
    return cluster_credentials_set(cluster=cluster, **credentials)


def cluster_server_changed(*, cluster: Cluster) -> bool:
    """Called after a write that may have changed `cluster.api_server`: credentials given for another URL lose
    their stored token and stay unusable until set again. Returns whether something was cleared."""
    cleared = ClusterCredential.objects.filter(cluster=cluster).exclude(server=cluster.api_server).update(
        token="", server=""
    )
    if cleared:
        logger.warning("cluster %s now points at %s: its credentials were cleared; set them again",
                       cluster.name, cluster.api_server or "no API server")
    return bool(cleared)


def credentials_reencrypt(*, user=None) -> int:
    """Re-encrypt every stored secret with the first key of PORTAL_CREDENTIAL_KEYS (after adding a new key).
    `user`: who asked in the admin (the platform team only); None: the operator's management command."""
    if user is not None and not is_platform(user):
        raise PermissionDenied("Only the platform team rotates the credential keys.")

    count = 0
    with transaction.atomic():
        for credential in ClusterCredential.objects.select_for_update().exclude(token=""):
            credential.save(update_fields=["token"])  # read with any key, written with the first
            count += 1
        for team in Team.objects.select_for_update().exclude(webhook_secret=""):
            team.save(update_fields=["webhook_secret"])
            count += 1
    return count

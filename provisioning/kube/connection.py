"""How to reach a registered cluster now: its stored credentials turned into a `ClusterConnection`, checked
against the URL they were given for and against the outbound policy, and pinned to the checked address.

The one module of `kube/` that reads the database (the cluster's credential row) and settings; the rest of `kube/`
knows nothing of Django, and `provisioning.kube` does not import this module, so importing the client stays free of
it. Credentials are written by `provisioning.credentials`.
"""
from __future__ import annotations

from dataclasses import replace

from django.conf import settings

from portal.outbound import OutboundBlocked, check_url
from provisioning.choices import Applier, CredentialSource
from provisioning.models import Cluster, ClusterCredential

from . import sources
from .client import ClusterConnection
from .errors import PermanentKubeError


def _in_cluster_identity() -> ClusterConnection:
    return sources.in_cluster_connection(
        server=settings.PORTAL_IN_CLUSTER_SERVER, token_file=settings.PORTAL_IN_CLUSTER_TOKEN_FILE,
        ca_file=settings.PORTAL_IN_CLUSTER_CA_FILE, request_timeout=settings.PORTAL_KUBE_TIMEOUT_SECONDS,
    )  # fmt: skip


def _pinned(connection: ClusterConnection) -> ClusterConnection:
    try:
        destination = check_url(connection.server)
    except OutboundBlocked as exc:
        raise PermanentKubeError(f"the API server {connection.server} is not called: {exc}") from None
    return replace(connection, address=destination.address)


def cluster_connection(cluster: Cluster) -> ClusterConnection:
    """How to reach `cluster` now. Raises PermanentKubeError when its credentials cannot be used."""
    if cluster.applier != Applier.KUBERNETES or not cluster.api_server:
        raise PermanentKubeError(f"cluster {cluster.name} has no API server")
    credential = ClusterCredential.objects.filter(cluster=cluster).first()
    if credential is None or not credential.server:
        raise PermanentKubeError(
            f"cluster {cluster.name} has no credentials for {cluster.api_server}: set them (register_cluster)"
        )
    if credential.server != cluster.api_server:
        raise PermanentKubeError(
            f"the credentials of cluster {cluster.name} were given for {credential.server}, not for its API "
            f"server {cluster.api_server}: set them again for the new server"
        )
    timeout = settings.PORTAL_KUBE_TIMEOUT_SECONDS
    if credential.source == CredentialSource.IN_CLUSTER:
        identity = _in_cluster_identity()  # the operator's own configuration, not a URL someone typed in
        if identity.server.rstrip("/") != cluster.api_server.rstrip("/"):
            raise PermanentKubeError(
                f"cluster {cluster.name} uses the pod's own service account, which is for {identity.server}, "
                f"not {cluster.api_server}"
            )
        return identity
    if credential.source == CredentialSource.KUBECONFIG:
        connection = sources.kubeconfig_connection(path=credential.kubeconfig_path,
                                                   context=credential.kubeconfig_context, request_timeout=timeout)
        if connection.server.rstrip("/") != cluster.api_server.rstrip("/"):
            raise PermanentKubeError(
                f"the kubeconfig context of cluster {cluster.name} now points at {connection.server}, not "
                f"{cluster.api_server}: register the cluster again to confirm it"
            )
        return _pinned(connection)
    connection = ClusterConnection(
        server=cluster.api_server, ca_cert=credential.ca_cert,
        insecure_skip_tls_verify=credential.insecure_skip_tls_verify, request_timeout=timeout,
    )  # fmt: skip
    if credential.source == CredentialSource.SECRET:
        data = sources.secret_data(_in_cluster_identity(), namespace=credential.secret_namespace,
                                   name=credential.secret_name)
        token = data.get(credential.secret_key, "")
        if not token:
            raise PermanentKubeError(f"Secret {credential.secret_namespace}/{credential.secret_name} has no key "
                                     f"{credential.secret_key!r}")
        # A service-account token Secret carries its cluster's CA beside the token.
        connection = replace(connection, token=token, ca_cert=credential.ca_cert or data.get("ca.crt", ""))
    else:
        connection = replace(connection, token=credential.token)
    return _pinned(connection)

"""Connections to a cluster's API server, built from plain values (never the environment).

`ClusterConnection` holds how to reach a cluster (resolved by `provisioning.credentials` from what the database
says, or by `provisioning.kube.sources` from a kubeconfig or the pod's service account); `api_client()` turns it
into a configured `kubernetes.client.ApiClient`; `KubeClient` adds the dynamic client and caches API discovery
for one unit of work.

TLS is required: https with a CA bundle, unless the connection says `insecure_skip_tls_verify` (which is also the
only way to use plain http). With `address` set, the TCP connection goes to that (already checked) address while
TLS still verifies the certificate against the URL's host name.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kubernetes.client import ApiClient, Configuration
from kubernetes.dynamic import DynamicClient, LazyDiscoverer
from kubernetes.dynamic.exceptions import ResourceNotFoundError, ResourceNotUniqueError
from kubernetes.dynamic.resource import Resource

from provisioning.kube.errors import PermanentKubeError, kube_errors

DEFAULT_FIELD_MANAGER = "gpu-portal"
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach one cluster. The token and CA are kept out of repr() so they never reach a log line."""

    server: str  # https://host:port of the API server
    token: str = field(default="", repr=False)
    ca_cert: str = field(default="", repr=False)  # PEM text; empty: the system trust store
    insecure_skip_tls_verify: bool = False
    request_timeout: float = 30.0  # seconds, for every call that does not say otherwise
    field_manager: str = DEFAULT_FIELD_MANAGER
    # Connect here instead of resolving the host again (the address the outbound policy checked).
    address: str = ""
    # A token file read before every request (a projected service-account token the kubelet rotates).
    token_file: str = ""


class _TimeoutApiClient(ApiClient):
    """An ApiClient whose calls time out by default: the dynamic client's discovery calls pass no timeout."""

    def __init__(self, configuration: Configuration, request_timeout: float) -> None:
        super().__init__(configuration)
        self.request_timeout = request_timeout

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        timeout = _request_timeout or self.request_timeout
        return super().call_api(method, url, header_params, body, post_params, _request_timeout=timeout)


def check_transport(connection: ClusterConnection) -> None:
    """Refuse a connection that would not verify the server: plain http, or https without a CA bundle, unless
    verification is explicitly skipped."""
    if connection.insecure_skip_tls_verify:
        return
    scheme = urlsplit(connection.server).scheme.lower()
    if scheme != "https":
        raise PermanentKubeError(
            f"the API server URL must be https (got {scheme or 'no scheme'}); plain http is used only with "
            "insecure_skip_tls_verify"
        )
    if not connection.ca_cert.strip():
        raise PermanentKubeError(
            "no CA bundle for the API server: give the cluster's CA certificate, or skip verification explicitly"
        )


def _read_token_file(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise PermanentKubeError(f"cannot read the service-account token file {path}: {exc.strerror}") from None


def api_client(connection: ClusterConnection) -> ApiClient:
    """A configured ApiClient for `connection`; the caller closes it."""
    check_transport(connection)
    parts = urlsplit(connection.server.rstrip("/"))
    host = connection.server.rstrip("/")
    if connection.address and connection.address != parts.hostname:
        netloc = f"[{connection.address}]" if ":" in connection.address else connection.address
        host = urlunsplit((parts.scheme, f"{netloc}:{parts.port}" if parts.port else netloc, parts.path, "", ""))
    configuration = Configuration(host=host)
    if host != connection.server.rstrip("/") and parts.hostname:
        # SNI and certificate verification against the name in the URL, not the address we connect to.
        configuration.tls_server_name = parts.hostname
        configuration.assert_hostname = parts.hostname
    # Our Celery tasks own retries (with backoff and a status row); urllib3 would otherwise retry silently. With
    # retries off urllib3 also never follows a redirect: a 3xx is an error, not a hop to another host.
    configuration.retries = False
    configuration.proxy = None  # a connection goes where it was checked to go, never through HTTPS_PROXY
    token = connection.token or (_read_token_file(connection.token_file) if connection.token_file else "")
    if token:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    if connection.token_file and not connection.token:
        def reread(config: Configuration) -> None:
            config.api_key["BearerToken"] = _read_token_file(connection.token_file)

        configuration.refresh_api_key_hook = reread  # the kubelet rotates the file; each request reads it
    if connection.insecure_skip_tls_verify:
        logger.warning("TLS verification is off for %s (insecure_skip_tls_verify)", connection.server)
        configuration.verify_ssl = False
        configuration.assert_hostname = False
    else:
        configuration.ca_cert_data = connection.ca_cert  # urllib3 takes PEM text: no temporary file
    return _TimeoutApiClient(configuration, connection.request_timeout)


class _InMemoryDiscoverer(LazyDiscoverer):
    """Discovery cached for the life of one client only. The library's default cache is a file in /tmp shared by
    every process talking to the same URL, which goes stale when CRDs are installed or removed."""

    def _write_cache(self) -> None:
        pass


# A path that cannot exist (/dev/null is not a directory), so the discoverer never reads a cache file.
_NO_CACHE_FILE = os.path.join(os.devnull, "gpu-portal-discovery.json")


class KubeClient:
    """One cluster's ApiClient and dynamic client, created on first use and reused for a unit of work."""

    def __init__(self, connection: ClusterConnection) -> None:
        self.connection = connection
        self._api_client: ApiClient | None = None
        self._dynamic: DynamicClient | None = None
        self._resources: dict[tuple[str, str], Resource] = {}

    @property
    def api_client(self) -> ApiClient:
        if self._api_client is None:
            self._api_client = api_client(self.connection)
        return self._api_client

    @property
    def dynamic(self) -> DynamicClient:
        if self._dynamic is None:
            with kube_errors("API discovery"):  # constructing it fetches /version and /apis
                self._dynamic = DynamicClient(
                    self.api_client, cache_file=_NO_CACHE_FILE, discoverer=_InMemoryDiscoverer
                )
        return self._dynamic

    def resource(self, api_version: str, kind: str) -> Resource:
        """The served resource for (apiVersion, kind), from discovery done once per client."""
        key = (api_version, kind)
        if key not in self._resources:
            with kube_errors(f"API discovery of {api_version} {kind}"):
                try:
                    self._resources[key] = self.dynamic.resources.get(api_version=api_version, kind=kind)
                except ResourceNotFoundError:
                    raise PermanentKubeError(
                        f"the cluster does not serve {api_version} {kind} (is its CRD or API version installed?)"
                    ) from None
                except ResourceNotUniqueError as exc:
                    raise PermanentKubeError(f"{api_version} {kind} is ambiguous on this cluster: {exc}") from None
        return self._resources[key]

    def close(self) -> None:
        if self._api_client is not None:
            self._api_client.close()
        self._api_client = self._dynamic = None
        self._resources.clear()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def raw(_client: Any, data: Any) -> Any:
    """A dynamic-client serializer that keeps the decoded JSON as plain dicts (`serializer=raw`)."""
    return data


def format_label_selector(selector: Mapping[str, str]) -> str:
    """{"a": "1", "b": "2"} -> "a=1,b=2", the equality form every API server understands."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))

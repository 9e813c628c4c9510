"""Connections to a cluster's API server, built from plain values (never kubeconfig files or the environment).

`ClusterConnection` holds what the database knows about a cluster; `api_client()` turns it into a configured
`kubernetes.client.ApiClient`; `KubeClient` adds the dynamic client and caches API discovery for one unit of work.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient, Configuration
from kubernetes.dynamic import DynamicClient, LazyDiscoverer
from kubernetes.dynamic.exceptions import ResourceNotFoundError, ResourceNotUniqueError
from kubernetes.dynamic.resource import Resource

from provisioning.kube.errors import PermanentKubeError, kube_errors

DEFAULT_FIELD_MANAGER = "gpu-portal"


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach one cluster. The token and CA are kept out of repr() so they never reach a log line."""

    server: str  # https://host:port of the API server
    token: str = field(default="", repr=False)
    ca_cert: str = field(default="", repr=False)  # PEM text; empty: the system trust store
    insecure_skip_tls_verify: bool = False
    request_timeout: float = 30.0  # seconds, for every call that does not say otherwise
    field_manager: str = DEFAULT_FIELD_MANAGER


class _TimeoutApiClient(ApiClient):
    """An ApiClient whose calls time out by default: the dynamic client's discovery calls pass no timeout."""

    def __init__(self, configuration: Configuration, request_timeout: float) -> None:
        super().__init__(configuration)
        self.request_timeout = request_timeout

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        timeout = _request_timeout or self.request_timeout
        return super().call_api(method, url, header_params, body, post_params, _request_timeout=timeout)


def api_client(connection: ClusterConnection) -> ApiClient:
    """A configured ApiClient for `connection`; the caller closes it."""
    configuration = Configuration(host=connection.server.rstrip("/"))
    # Our Celery tasks own retries (with backoff and a status row); urllib3 would otherwise retry silently.
    configuration.retries = False
    if connection.token:
        configuration.api_key = {"BearerToken": connection.token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    if connection.insecure_skip_tls_verify:
        configuration.verify_ssl = False
        configuration.assert_hostname = False
    elif connection.ca_cert:
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

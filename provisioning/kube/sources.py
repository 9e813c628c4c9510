"""Where a connection's identity comes from when no token is stored: the portal pod's own service account, a
kubeconfig file, or a Secret read through the pod's identity. Plain values in, `ClusterConnection` out.

The in-cluster files are the ones the kubelet projects into every pod, as the official client reads them
(kubernetes 37.0.1, `kubernetes/config/incluster_config.py`: `KUBERNETES_SERVICE_HOST`/`_PORT` and
`/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}`; client-go's `rest.InClusterConfig` in
`rest/config.go` does the same); the token is re-read before each request because the kubelet rotates it (that
client re-reads it every minute; reading a small file per request is cheaper than being a minute late). A kubeconfig is read the way kubectl reads it
(`clusters`, `users`, `contexts`, k8s.io/client-go/tools/clientcmd/api/v1 types.go), limited to bearer tokens
(`token`, `tokenFile`) and CA bundles (`certificate-authority[-data]`); client certificates and exec plugins are
refused with a message rather than half supported.
"""
from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

import yaml

from provisioning.kube.client import ClusterConnection, KubeClient, raw
from provisioning.kube.errors import PermanentKubeError, kube_errors


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise PermanentKubeError(f"cannot read {what} {path}: {exc.strerror}") from None


def in_cluster_connection(*, server: str, token_file: str, ca_file: str, request_timeout: float) -> ClusterConnection:
    """The portal pod's own identity towards its own cluster."""
    if not server:
        raise PermanentKubeError(
            "the portal is not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset) and "
            "PORTAL_IN_CLUSTER_SERVER is empty"
        )
    _read(token_file, "the service-account token file")  # fail now, with the path, rather than on first request
    return ClusterConnection(server=server, token_file=token_file, ca_cert=_read(ca_file, "the service-account CA"),
                             request_timeout=request_timeout)


def _named(entries: Any, name: str, section: str, path: str) -> dict:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(section[:-1]) or {}
    raise PermanentKubeError(f"the kubeconfig {path} has no {section[:-1]} named {name!r}")


def _data_or_file(entry: dict, key: str, base: Path, what: str) -> str:
    data = entry.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise PermanentKubeError(f"{key}-data in the kubeconfig is not base64 PEM") from None
    file = entry.get(key)
    return _read(str(base / file), what) if file else ""


def kubeconfig_connection(*, path: str, context: str, request_timeout: float) -> ClusterConnection:
    """The server, CA and bearer token of `context` (the file's current-context when empty) in the kubeconfig."""
    try:
        config = yaml.safe_load(_read(path, "the kubeconfig")) or {}
    except yaml.YAMLError as exc:
        raise PermanentKubeError(f"the kubeconfig {path} is not YAML: {exc}") from None
    if not isinstance(config, dict):
        raise PermanentKubeError(f"the kubeconfig {path} is not a kubeconfig")
    context = context or config.get("current-context") or ""
    if not context:
        raise PermanentKubeError(f"the kubeconfig {path} has no current-context: name a context")
    ctx = _named(config.get("contexts"), context, "contexts", path)
    cluster = _named(config.get("clusters"), ctx.get("cluster", ""), "clusters", path)
    user = _named(config.get("users"), ctx.get("user", ""), "users", path) if ctx.get("user") else {}
    base = Path(path).resolve().parent  # relative paths in a kubeconfig are relative to the file
    unsupported = [key for key in ("client-certificate", "client-certificate-data", "exec", "auth-provider")
                   if user.get(key)]
    if unsupported:
        raise PermanentKubeError(
            f"context {context} authenticates with {', '.join(unsupported)}, which the portal does not use: give "
            "the user a service-account token (token or tokenFile)"
        )
    server = cluster.get("server") or ""
    if not server:
        raise PermanentKubeError(f"cluster {ctx.get('cluster')} in the kubeconfig {path} has no server")
    token_file = str(base / user["tokenFile"]) if user.get("tokenFile") else ""
    return ClusterConnection(
        server=server, token=user.get("token") or "", token_file=token_file,
        ca_cert=_data_or_file(cluster, "certificate-authority", base, "the kubeconfig's certificate-authority"),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")), request_timeout=request_timeout,
    )  # fmt: skip


def secret_data(identity: ClusterConnection, *, namespace: str, name: str) -> dict[str, str]:
    """The keys of a Secret, decoded to text, read with `identity` (the pod's service account)."""
    with KubeClient(identity) as kube:
        resource = kube.resource("v1", "Secret")
        with kube_errors(f"reading Secret {namespace}/{name}"):
            secret = kube.dynamic.get(resource, name=name, namespace=namespace, serializer=raw)
    decoded = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            decoded[key] = base64.b64decode(value, validate=True).decode().strip()
        except (binascii.Error, UnicodeDecodeError):
            continue  # binary keys are not tokens or PEM; a missing key is reported by the caller
    return decoded

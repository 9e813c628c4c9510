"""Authorization attributes of an HTTP call to a Kubernetes API server: a port of k8s.io/apiserver's
RequestInfoFactory (kubernetes v1.34 `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), so the
portal's recorded calls can be checked against its declared RBAC rules (deploy/rbac.py)."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

API_PREFIXES = {"api", "apis"}
GROUPLESS_API_PREFIXES = {"api"}
SPECIAL_VERBS = {"proxy", "watch"}
NAMESPACE_SUBRESOURCES = {"status", "finalize"}
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_TRUE = {"1", "t", "T", "true", "TRUE", "True"}


@dataclass(frozen=True)
class Attributes:
    verb: str
    is_resource: bool
    path: str
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""

    @property
    def resource_key(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_attributes(method: str, url: str) -> Attributes:
    """What the API server authorizes for this request: verb and resource, or verb and non-resource path."""
    split = urlsplit(url)
    path = split.path
    query = parse_qs(split.query)
    parts = [p for p in path.strip("/").split("/") if p]
    non_resource = Attributes(verb=method.lower(), is_resource=False, path=path)
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in GROUPLESS_API_PREFIXES:
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]

    verb_from_path = False
    if parts[0] in SPECIAL_VERBS:
        if len(parts) < 2:
            raise ValueError(f"unable to determine kind and namespace from url {url}")
        verb, parts = parts[0], parts[1:]
        verb_from_path = True
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")

    namespace = ""
    if parts[0] == "namespaces":
        if len(parts) > 1:
            namespace = parts[1]
            if len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
                parts = parts[2:]

    resource = parts[0] if parts else ""
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and not verb_from_path else ""

    if not name and verb == "get":
        verb = "watch" if query.get("watch", [""])[0] in _TRUE else "list"
        field_selector = query.get("fieldSelector", [""])[0]
        if field_selector.startswith("metadata.name=") and "," not in field_selector:
            name = field_selector.split("=", 1)[1]
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb=verb, is_resource=True, path=path, api_group=group, api_version=version,
                      resource=resource, subresource=subresource, name=name, namespace=namespace)

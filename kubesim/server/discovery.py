"""API discovery: /version, the legacy documents (/api, /apis, /apis/<group>, /api/v1, /apis/<group>/<version>)
and the aggregated discovery document kubectl and client-go ask for first.

client-go (kubernetes/client-go v0.37.0-beta.0 discovery/discovery_client.go, downloadLegacy / downloadAPIs) sends
`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,...,application/json` to /api and
/apis, and reads the answer as aggregated only when its Content-Type names that kind; otherwise it falls back to
one request per group version. Shapes: k8s.io/api apidiscovery/v2 types.go (APIGroupDiscoveryList, APIVersionDiscovery
with `freshness`, APIResourceDiscovery with `responseKind`, `scope`, `singularResource`, `subresources`).
"""
from __future__ import annotations

import re
from typing import Any

import aiohttp.web

from kubesim.resources import ServedResource, group_order, version_priority
from kubesim.server.http import api_error, reply

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_NOT_FOUND = "the server could not find the requested resource"


def wants_aggregated(accept: str) -> bool:
    """True when the client lists the v2 aggregated document among what it accepts."""
    for item in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in item.split(";")[1:])
        if params.get("g") == "apidiscovery.k8s.io" and params.get("v") == "v2" and \
                params.get("as") == "APIGroupDiscoveryList":
            return True
    return False


def _resource_entry(served: ServedResource) -> dict[str, Any]:
    """Legacy APIResource of a resource and of each of its subresources."""
    main = {"name": served.plural, "singularName": served.kind.lower(), "namespaced": served.namespaced,
            "kind": served.kind, "verbs": list(served.verbs)}
    if served.short_names:
        main["shortNames"] = list(served.short_names)
    if served.categories:
        main["categories"] = list(served.categories)
    return main


def _sub_kind(served: ServedResource, sub: str) -> str:
    return "Scale" if sub == "scale" else served.kind


def _sub_group_version(served: ServedResource, sub: str) -> tuple[str, str]:
    return ("autoscaling", "v1") if sub == "scale" else (served.group, served.version)


def legacy_entries(served: ServedResource) -> list[dict[str, Any]]:
    subs = [{"name": f"{served.plural}/{sub}", "singularName": "", "namespaced": served.namespaced,
             "kind": _sub_kind(served, sub), "verbs": ["get", "patch", "update"]} for sub in served.subresources]
    return [_resource_entry(served), *subs]


def _aggregated_resource(served: ServedResource) -> dict[str, Any]:
    entry = {
        "resource": served.plural,
        "responseKind": {"group": served.group, "version": served.version, "kind": served.kind},
        "scope": "Namespaced" if served.namespaced else "Cluster",
        "singularResource": served.kind.lower(),
        "verbs": list(served.verbs),
    }
    if served.short_names:
        entry["shortNames"] = list(served.short_names)
    if served.categories:
        entry["categories"] = list(served.categories)
    subs = []
    for sub in served.subresources:
        group, version = _sub_group_version(served, sub)
        subs.append({"subresource": sub, "responseKind": {"group": group, "version": version,
                                                          "kind": _sub_kind(served, sub)},
                     "verbs": ["get", "patch", "update"]})
    if subs:
        entry["subresources"] = subs
    return entry


class DiscoveryMixin:
    """Discovery answers of KubeEmulator, from the resources it serves (`self._served`)."""

    _served: dict
    git_version: str

    def server_version(self) -> dict[str, Any]:
        major, minor = (re.findall(r"\d+", self.git_version) + ["0", "0"])[:2]
        return {
            "major": major, "minor": minor, "gitVersion": self.git_version, "gitCommit": "0" * 40,
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0",
            "compiler": "gc", "platform": "linux/amd64",
        }  # fmt: skip

    def _group_versions(self) -> dict[str, list[str]]:
        """Named groups in the order the API server lists them (built-in groups first), versions preferred first."""
        versions: dict[str, set[str]] = {}
        for served in self._served.values():
            if served.group:
                versions.setdefault(served.group, set()).add(served.version)
        ordered = sorted(versions.items(), key=lambda item: group_order(item[0]))
        return {group: sorted(found, key=version_priority) for group, found in ordered}

    @staticmethod
    def _api_group(group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def _in_group_version(self, group: str, version: str) -> list[ServedResource]:
        return [s for s in self._served.values() if (s.group, s.version) == (group, version)]

    def discovery_root(self, path: str, accept: str) -> aiohttp.web.Response:
        """/api or /apis: aggregated when asked for, else the legacy APIVersions / APIGroupList."""
        if wants_aggregated(accept):
            groups = [("", ["v1"])] if path == "/api" else list(self._group_versions().items())
            items = [{"metadata": {"name": group, "creationTimestamp": None}, "versions": [
                {"version": version, "freshness": "Current",
                 "resources": [_aggregated_resource(s) for s in self._in_group_version(group, version)]}
                for version in versions]} for group, versions in groups]
            body = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                    "items": items}
            return reply(body, content_type=AGGREGATED)
        if path == "/api":
            return reply({"kind": "APIVersions", "versions": ["v1"],
                          "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
        groups = [self._api_group(group, versions) for group, versions in self._group_versions().items()]
        return reply({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    def discovery_group(self, group: str) -> dict[str, Any]:
        versions = self._group_versions().get(group)
        if not versions:
            raise api_error(404, "NotFound", _NOT_FOUND)
        return {"kind": "APIGroup", "apiVersion": "v1", **self._api_group(group, versions)}

    def discovery_group_version(self, group: str, version: str) -> dict[str, Any]:
        served = self._in_group_version(group, version)
        if not served:
            raise api_error(404, "NotFound", _NOT_FOUND)
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": served[0].api_version,
                "resources": [entry for s in served for entry in legacy_entries(s)]}

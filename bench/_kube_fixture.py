"""A lean stand-in for a Kubernetes API server serving one fixed PodList from a file, for the reconciliation
benchmark: HTTPS with the test CA (kubesim.tls), the discovery the `kubernetes` dynamic client asks for, and
`GET /api/v1/pods` paginated as kube-apiserver paginates (`limit`, `continue`; every page at the list's
resourceVersion; kubesim/paging.py encodes the tokens). The pods are written once to a file (`PodListFile`) and each
page is sliced out of it, so the process serving them holds none decoded and the fixture's memory stays out of the
reconciler's figures (it runs in another process). kubesim's own fake keeps every object as Python dicts and
copies them on each LIST: right for tests, far too slow for 200,000 pods.
"""
from __future__ import annotations

import json
import mmap
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from kubesim import paging
from kubesim.tls import TestCA

RESOURCE_VERSION = 999_999
TOKEN = "bench-token"


class PodListFile:
    """A PodList written pod by pod (`add`), then served in slices: one file, the byte range of each item."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("wb")
        self._file.write(b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":['
                         % RESOURCE_VERSION)
        self.offsets: list[tuple[int, int]] = []
        self._map: mmap.mmap | None = None

    def add(self, pod: dict) -> None:
        if self.offsets:
            self._file.write(b",")
        start = self._file.tell()
        self._file.write(json.dumps(pod, separators=(",", ":")).encode())
        self.offsets.append((start, self._file.tell()))

    def close(self) -> None:
        self._file.write(b"]}")
        self._file.close()
        with self.path.open("rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def __len__(self) -> int:
        return len(self.offsets)

    def page(self, start: int, limit: int) -> bytes:
        end = len(self.offsets) if not limit else min(start + limit, len(self.offsets))
        meta = {"resourceVersion": str(RESOURCE_VERSION)}
        if end < len(self.offsets):
            meta["continue"] = paging.encode_continue(f"{end:09d}", RESOURCE_VERSION)
        items = self._map[self.offsets[start][0]:self.offsets[end - 1][1]] if end > start else b""
        head = b'{"kind":"PodList","apiVersion":"v1","metadata":%s,"items":[' % json.dumps(meta).encode()
        return head + items + b"]}"


def _discovery(path: str) -> dict | None:
    if path == "/version":
        return {"major": "1", "minor": "35", "gitVersion": "v1.35.2", "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"]}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    if path == "/api/v1":
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
            {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
             "verbs": ["get", "list", "watch"]}]}
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, b'{"kind":"Status","code":401,"reason":"Unauthorized"}')
        url = urlsplit(self.path)
        found = _discovery(url.path)
        if found is not None:
            return self._send(200, json.dumps(found).encode())
        if url.path != "/api/v1/pods":
            return self._send(404, b'{"kind":"Status","code":404,"reason":"NotFound"}')
        params = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if params.get("watch") in ("1", "true"):
            return self._send(200, b"")  # nothing changes: the watch ends at once
        start = 0
        if params.get("continue"):
            start = int(paging.decode_continue(params["continue"])[0])
        self.server.lists += 1
        return self._send(200, self.server.pods.page(start, int(params.get("limit") or 0)))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    pods: PodListFile
    lists = 0


def serve(pods: PodListFile, ca: TestCA) -> tuple[str, _Server]:
    """Serve `pods` on a free loopback port, in a background thread; returns the URL and the server."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.pods = pods
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(ca.cert_file, ca.key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, name="bench-kube-fixture", daemon=True).start()
    return f"https://127.0.0.1:{server.server_address[1]}", server

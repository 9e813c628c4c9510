"""The synchronous face of the fake API server for tests and the simulated cluster: `FakeKubeAPI` starts the
emulator on an event loop in a background thread, serves it over HTTPS (a certificate of the run's test CA), and
offers helpers to seed and mutate objects, inject faults and read the request log."""
from __future__ import annotations

import asyncio
import functools
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp.test_utils
import kmock
from kmock._internal import rendering

from kubesim.resources import CUSTOM_RESOURCES, ServedResource
from kubesim.server.emulator import DEFAULT_GIT_VERSION, KubeEmulator
from kubesim.server.http import status_body
from kubesim.tls import TestCA, test_ca

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    content_type: str  # without parameters such as charset
    params: dict[str, str]  # query parameters: fieldManager, force, labelSelector, propagationPolicy, ...
    body: Any  # decoded JSON/YAML, or None
    headers: dict[str, str]
    at: float = 0.0  # time.time() when the request arrived

    @classmethod
    def of(cls, request: rendering.Request, at: float = 0.0) -> RecordedRequest:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        return cls(
            request.method.value, request.url.path, content_type, dict(request.params), request.data,
            dict(request.headers), at,
        )  # fmt: skip


class _TLSServer(aiohttp.test_utils.RawTestServer):
    """aiohttp's raw test server, listening with TLS."""

    def __init__(self, handler, *, ssl_context: ssl.SSLContext, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._ssl_context = ssl_context

    async def __aenter__(self) -> _TLSServer:
        await self.start_server(loop=self._loop, ssl=self._ssl_context)
        return self


class FakeKubeAPI:
    """A running fake API server. Start with `FakeKubeAPI.start()` (or the `fake_kube` fixture), stop with
    `stop()`. Every method is synchronous and safe to call from the test's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self._loop, self._thread = loop, thread
        self.emulator: KubeEmulator
        self._server: kmock.Server

    @classmethod
    def start(
        cls, *, git_version: str = DEFAULT_GIT_VERSION, custom_resources=CUSTOM_RESOURCES, tls: bool = True,
        port: int | None = None, ca: TestCA | None = None, alpha_apis: bool = True, disabled_apis: tuple[str, ...] = (),
    ) -> FakeKubeAPI:
        """Serve https with a certificate of the run's test CA (`ca_pem`, `ca_file`); `tls=False` serves plain
        http, for the tests that opt into an unverified connection on purpose. `port` fixes the loopback port
        (default: a free one) and `ca` the CA signing the certificate (the simulated cluster keeps its own);
        `alpha_apis=False` leaves the alpha built-in APIs out, as a cluster started without --runtime-config;
        `disabled_apis` leaves those built-in group versions out, as `--runtime-config=<group/version>=false` does."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-kube-api", daemon=True)
        thread.start()
        fake = cls(loop, thread)
        fake._ca = ca or test_ca()

        async def enter() -> None:  # asyncio objects are made on the loop that will use them
            fake.emulator = KubeEmulator(git_version=git_version, custom_resources=tuple(custom_resources),
                                         alpha_apis=alpha_apis, disabled_apis=tuple(disabled_apis))
            await fake.emulator.__aenter__()
            server_cls = functools.partial(_TLSServer, ssl_context=fake._ca.server_context()) if tls else None
            options = ({"server_cls": server_cls} if server_cls else {}) | ({"port": port} if port else {})
            fake._server = kmock.Server(fake.emulator, **options)
            await fake._server.__aenter__()

        fake._run(enter())
        return fake

    def stop(self) -> None:
        async def leave() -> None:
            await self._server.__aexit__(None, None, None)
            await self.emulator.__aexit__(None, None, None)

        try:
            self._run(leave())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def __enter__(self) -> FakeKubeAPI:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests read --------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return str(self._server.url).rstrip("/")

    @property
    def git_version(self) -> str:
        return self.emulator.git_version

    @property
    def tls(self) -> bool:
        return self.url.startswith("https://")

    @property
    def ca_pem(self) -> str:
        """The CA that signed the fake's certificate (empty when it serves plain http)."""
        return self._ca.ca_pem if self.tls else ""

    @property
    def ca_file(self) -> str:
        return self._ca.ca_file

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, discovery included, in arrival order."""
        requests, arrived = list(self.emulator._requests), list(self.emulator._arrived_at)
        return [RecordedRequest.of(request, at) for request, at in zip(requests, arrived)]

    @property
    def errors(self) -> list[Exception]:
        """Exceptions the fake itself raised while serving (its bugs, not the API errors it answered)."""
        return list(self.emulator.errors)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        served, key = self.emulator.key_of(api_version, kind, name, namespace)
        return self._call(self.emulator._live, key)

    def find(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        """Stored objects of a kind, optionally in one namespace and matching a label selector."""
        return self._call(self.emulator.find, api_version, kind, namespace, label_selector)

    # -- seeding and mutating (watchers see these changes) -----------------------------------------------------

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create or replace an object as given, e.g. a Node with GFD labels or a Pod with a status."""
        return self._call(self.emulator.seed, obj)

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Mapping) -> dict:
        """JSON-merge-patch any part of an object (None deletes a key)."""
        return self._call(self.emulator.merge, api_version, kind, name, namespace, patch)

    def patch_status(self, api_version: str, kind: str, name: str, namespace: str | None, status: Mapping) -> dict:
        """Merge into an object's status, as its controller would (e.g. a Pod moving to Running)."""
        return self.patch(api_version, kind, name, namespace, {"status": status})

    def remove(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self._call(self.emulator.remove, api_version, kind, name, namespace)

    def compact(self, revision: int | None = None) -> int:
        """Compact the history (kubesim/paging.py): older continue tokens and watches get 410 Expired."""
        return self._call(self.emulator.compact, revision)

    def install(self, *served: ServedResource) -> None:
        """Serve more resources (e.g. `resources_from_crd(crd)`), as installing CRDs does."""
        for resource in served:
            self._call(self.emulator.serve, resource)

    # -- fault injection ---------------------------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        message: str = "",
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer the next `times` requests whose method matches and whose path matches `path_regex` (searched)
        with `status`, a Status body carrying `message` (or `body` as given) and `headers` (e.g. Retry-After).
        Like a rejected request on a real server, a failed write changes nothing."""
        payload = body if body is not None else status_body(status, message)
        response = rendering.Response(status=status, headers=dict(headers or {}), payload=payload)
        self._call(self.emulator.add_fault, method, path_regex, times, response)

    def delay_next(self, method: str, path_regex: str, seconds: float, *, times: int = 1) -> None:
        """Hold the next `times` matching requests for `seconds`, then serve them normally (a slow server: a
        client that timed out meanwhile may still see its write happen)."""

        async def hold() -> None:
            await asyncio.sleep(seconds)
            raise NotImplementedError  # kmock: "matched, nothing to answer": go on to the next reaction

        self._call(self.emulator.add_fault, method, path_regex, times, hold)

    # -- running things on the loop ----------------------------------------------------------------------------

    def _run(self, coroutine: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        async def call() -> T:
            return fn(*args)

        return self._run(call())


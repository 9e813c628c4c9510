"""A tiny real HTTP server that receives webhook POSTs, for tests of notifications (the portal's own code is not
mocked: it really connects, sends and reads the answer).

It listens on this machine's own network address, not on 127.0.0.1: a webhook never calls a loopback address,
whatever the settings say (portal.outbound.WEBHOOK_NEVER). The autouse fixture allows that one address in
PORTAL_WEBHOOK_ALLOWED_NETWORKS (it is usually private, which webhooks may reach only when allowed)."""
from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


import pytest


def _receiver_host() -> str:
    """The address this machine reaches other hosts from (a UDP socket's "connect" only picks a route; nothing is
    sent), else what its host name resolves to."""
    candidates = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            candidates.append(probe.getsockname()[0])
        except OSError:
            pass
    try:
        candidates.extend(info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET))
    except OSError:
        pass
    for candidate in candidates:
        address = ipaddress.ip_address(candidate)
        if not (address.is_loopback or address.is_link_local or address.is_unspecified):
            return candidate
    raise RuntimeError("webhook tests need a network address other than loopback on this machine")


RECEIVER_HOST = _receiver_host()


@pytest.fixture(autouse=True)
def webhook_receivers_allowed(settings) -> None:
    settings.PORTAL_WEBHOOK_ALLOWED_NETWORKS = [f"{RECEIVER_HOST}/32"]


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: object
    raw: bytes = b""  # the exact bytes received, which a signature covers


@dataclass
class WebhookReceiver:
    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)  # status codes to answer, in order; then 204
    location: str = ""  # the Location header sent with a 3xx answer

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks/gpu"


def start_receiver(host: str = RECEIVER_HOST) -> WebhookReceiver:
    receiver: WebhookReceiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            receiver.received.append(Received(self.path, dict(self.headers), body, raw))
            status = receiver.answers.pop(0) if receiver.answers else 204
            self.send_response(status)
            if 300 <= status < 400 and receiver.location:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST  # noqa: N815 - a client that followed a redirect by switching to GET is recorded too

        def log_message(self, *args):  # keep test output clean
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    receiver = WebhookReceiver(server=server)
    threading.Thread(target=server.serve_forever, name="webhook-receiver", daemon=True).start()
    return receiver


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    """A team's webhook endpoint: a receiver on the allowed address, recording what it is sent."""
    receiver = start_receiver()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()

"""A tiny real HTTP server on 127.0.0.1 that receives webhook POSTs, for tests of notifications (the portal's
own code is not mocked: it really connects, sends and reads the answer)."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


def start_receiver() -> WebhookReceiver:
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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = WebhookReceiver(server=server)
    threading.Thread(target=server.serve_forever, name="webhook-receiver", daemon=True).start()
    return receiver

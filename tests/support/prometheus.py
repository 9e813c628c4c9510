"""A real Prometheus (Debian's /usr/bin/prometheus) on a free loopback port with a temporary data directory,
scraping a DCGM exporter stub every second: an HTTP server in the test process that serves DCGM-format text
(the metric and label names of NVIDIA/dcgm-exporter 4.5.3-4.8.2, see chargeback/idle/dcgm.py) for the pods a test
gives it. The portal queries that Prometheus over HTTP; nothing of the portal's query code is replaced."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMETHEUS = "/usr/bin/prometheus"


@dataclass
class Device:
    namespace: str
    pod: str
    gpu: int
    uuid: str
    utilisation: float  # percent (DCGM_FI_DEV_GPU_UTIL); GR_ENGINE_ACTIVE is the same / 100
    fb_used_mib: int
    fb_free_mib: int
    mig_profile: str = ""
    model: str = "NVIDIA H100 80GB HBM3"


@dataclass
class DcgmStub:
    server: ThreadingHTTPServer
    devices: dict[tuple[str, str, int], Device] = field(default_factory=dict)
    scrapes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def target(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"

    def set(self, device: Device) -> None:
        with self.lock:
            self.devices[(device.namespace, device.pod, device.gpu)] = device

    def text(self) -> str:
        """The exposition format as the exporter's render_metrics.go template writes it, pod labels appended."""
        with self.lock:
            devices = list(self.devices.values())
        families = [
            ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda d: d.utilisation),
            ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.",
             lambda d: d.utilisation / 100),
            ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", lambda d: d.fb_free_mib),
            ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", lambda d: d.fb_used_mib),
        ]
        lines = []
        for name, help_text, value in families:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
            for d in devices:
                mig = f',GPU_I_PROFILE="{d.mig_profile}",GPU_I_ID="1"' if d.mig_profile else ""
                lines.append(
                    f'{name}{{gpu="{d.gpu}",UUID="{d.uuid}",pci_bus_id="00000000:{d.gpu + 1:02X}:00.0",'
                    f'device="nvidia{d.gpu}",modelName="{d.model}"{mig},hostname="gpu-node-1",'
                    f'container="main",namespace="{d.namespace}",pod="{d.pod}"}} {value(d)}'
                )
        return "\n".join(lines) + "\n"


def start_dcgm_stub() -> DcgmStub:
    stub: DcgmStub

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            body = stub.text().encode()
            stub.scrapes += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub = DcgmStub(server=server)
    threading.Thread(target=server.serve_forever, name="dcgm-stub", daemon=True).start()
    return stub


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PrometheusServer:
    url: str
    process: subprocess.Popen
    data_dir: Path

    def query(self, promql: str) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}",
                                    timeout=5) as answer:
            return json.loads(answer.read())["data"]["result"]

    def wait_for(self, promql: str, *, minimum: float, series: int = 1, timeout: float = 60) -> None:
        """Poll (bounded) until `promql` gives at least `series` series each >= `minimum`."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.query(promql)
            if len(last) >= series and all(float(r["value"][1]) >= minimum for r in last):
                return
            time.sleep(0.2)
        raise AssertionError(f"Prometheus never answered {promql!r} with {series} series >= {minimum}: {last}")


def start_prometheus(stub: DcgmStub, *, timeout: float = 30) -> PrometheusServer:
    data_dir = Path(tempfile.mkdtemp(prefix="prometheus-test-"))
    port = _free_port()
    config = data_dir / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: dcgm-exporter\n    scrape_interval: 1s\n    static_configs:\n"
        f"      - targets: ['{stub.target}']\n"
    )
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data_dir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h"],
        stdout=subprocess.DEVNULL, stderr=(data_dir / "prometheus.log").open("w"),
    )  # fmt: skip
    server = PrometheusServer(url=f"http://127.0.0.1:{port}", process=process, data_dir=data_dir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(data_dir / 'prometheus.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/-/ready", timeout=1) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(0.1)
    stop_prometheus(server)
    raise RuntimeError("prometheus did not become ready")


def stop_prometheus(server: PrometheusServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    shutil.rmtree(server.data_dir, ignore_errors=True)

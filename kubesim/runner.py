"""Starting the simulated cluster: serve and seed it, register it as a cluster, and run its loop (the
`simulate_cluster` command in the foreground; tests in a background thread)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.management import CommandError, call_command

from kubesim import cluster
from kubesim.kubelet import Simulation
from kubesim.server import FakeKubeAPI
from kubesim.tls import make_ca

# The cluster's ServiceAccount token: the fake API server accepts any bearer token, as it checks no RBAC.
SIMULATED_TOKEN = "simulated-cluster-token"


def serve_and_seed(*, port: int, ca_dir: str | Path) -> FakeKubeAPI:
    """The fake API server on 127.0.0.1:`port` with a CA of its own written to `ca_dir`, its GPU nodes seeded."""
    ca_dir = Path(ca_dir)
    ca_dir.mkdir(parents=True, exist_ok=True)
    ca = make_ca(ca_dir, common_name="gpu-portal simulated cluster CA")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # every poll of the portal would be logged
    try:
        fake = FakeKubeAPI.start(port=port, ca=ca)
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{port}: {exc}") from exc
    cluster.seed(fake)
    return fake


def register_and_sync(fake: FakeKubeAPI, *, name: str, stdout=None, stderr=None) -> None:
    """Register the simulated API server as cluster `name` through the normal commands, then sync its inventory."""
    if not loopback_allowed():
        raise CommandError("the portal may not call 127.0.0.1: add 127.0.0.0/8 to PORTAL_OUTBOUND_ALLOWED_NETWORKS "
                           "(scripts/demo does) so it can reach the simulated cluster")
    minor = fake.git_version.lstrip("v").rsplit(".", 1)[0]
    call_command("register_cluster", name, "--server", fake.url, "--token", SIMULATED_TOKEN,
                 "--ca-cert-file", fake.ca_file, "--kubernetes-version", minor, stdout=stdout, stderr=stderr)
    call_command("sync_inventory", "--cluster", name, stdout=stdout, stderr=stderr)


def loopback_allowed() -> bool:
    from portal.outbound import OutboundBlocked, check_url

    try:
        check_url("https://127.0.0.1/")
    except OutboundBlocked:
        return False
    return True


@contextmanager
def loop_in_background(simulation: Simulation, tick_seconds: float) -> Iterator[threading.Thread]:
    """Tick the simulation in a thread until the block ends (for tests that drive the portal meanwhile)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            simulation.tick()
            stop.wait(tick_seconds)

    thread = threading.Thread(target=run, name="kubesim-loop", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(timeout=30)

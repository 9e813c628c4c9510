"""Starting the simulated cluster: serve and seed it, register it as a cluster, and run its loop (the
`simulate_cluster` command in the foreground; tests in a background thread)."""
from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from django.core.management import CommandError, call_command

from kubesim import cluster, kueue
from kubesim.kubelet import Simulation
from kubesim.server import FakeKubeAPI
from kubesim.tls import make_ca

# The cluster's ServiceAccount token: the fake API server accepts any bearer token, as it checks no RBAC.
SIMULATED_TOKEN = "simulated-cluster-token"


def serve_and_seed(*, port: int, ca_dir: str | Path, alpha_apis: bool = True) -> FakeKubeAPI:
    """The fake API server on 127.0.0.1:`port` with a CA of its own written to `ca_dir`, its GPU nodes seeded."""
    ca_dir = Path(ca_dir)
    ca_dir.mkdir(parents=True, exist_ok=True)
    ca = make_ca(ca_dir, common_name="gpu-portal simulated cluster CA")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # every poll of the portal would be logged
    try:
        fake = FakeKubeAPI.start(port=port, ca=ca, alpha_apis=alpha_apis)
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{port}: {exc}") from exc
    cluster.seed(fake)
    return fake


def write_kubeconfig(fake: FakeKubeAPI, *, directory: str | Path, name: str) -> Path:
    """`<directory>/kubeconfig`: the simulated cluster for kubectl, its CA embedded and the simulated token."""
    path = Path(directory).resolve() / "kubeconfig"
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": name, "preferences": {},
        "clusters": [{"name": name, "cluster": {
            "server": fake.url, "certificate-authority-data": base64.b64encode(fake.ca_pem.encode()).decode()}}],
        "users": [{"name": f"{name}-admin", "user": {"token": SIMULATED_TOKEN}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin", "namespace": "default"}}],
    }  # fmt: skip
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


# The team ClusterQueue of a Kueue cluster: the one the portal's LocalQueues point at when the cluster names no
# gang queue (provisioning/manifests/team.py), with the GPUs of the simulated fleet as its quota.
KUEUE_CLUSTER_QUEUE = "gpu-portal"
KUEUE_FLAVOR = "default-flavor"


def seed_kueue(fake: FakeKubeAPI, *, team_namespaces: list[str], gpus: int = 64) -> None:
    """What a platform team sets up for Kueue: a ResourceFlavor, the team ClusterQueue with GPU quota, and each
    team's namespace with its LocalQueue (named like the namespace, as the portal renders it)."""
    fake.put({"apiVersion": kueue.KUEUE, "kind": "ResourceFlavor", "metadata": {"name": KUEUE_FLAVOR}, "spec": {}})
    fake.put({"apiVersion": kueue.KUEUE, "kind": "ClusterQueue", "metadata": {"name": KUEUE_CLUSTER_QUEUE},
              "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "resourceGroups": [
                  {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": KUEUE_FLAVOR, "resources": [
                      {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]}})
    for namespace in team_namespaces:
        fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        fake.put({"apiVersion": kueue.KUEUE, "kind": "LocalQueue",
                  "metadata": {"name": namespace, "namespace": namespace},
                  "spec": {"clusterQueue": KUEUE_CLUSTER_QUEUE}})


def register_and_sync(fake: FakeKubeAPI, *, name: str, gang_scheduler: str | None = None, stdout=None,
                      stderr=None) -> None:
    """Register the simulated API server as cluster `name` through the normal commands, then sync its inventory."""
    if not loopback_allowed():
        raise CommandError("the portal may not call 127.0.0.1: add 127.0.0.0/8 to PORTAL_OUTBOUND_ALLOWED_NETWORKS "
                           "(scripts/demo does) so it can reach the simulated cluster")
    minor = fake.git_version.lstrip("v").rsplit(".", 1)[0]
    extra = ["--gang-scheduler", gang_scheduler] if gang_scheduler else []
    call_command("register_cluster", name, "--server", fake.url, "--token", SIMULATED_TOKEN,
                 "--ca-cert-file", fake.ca_file, "--kubernetes-version", minor, *extra, stdout=stdout, stderr=stderr)
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

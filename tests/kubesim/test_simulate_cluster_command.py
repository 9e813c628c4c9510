"""`manage.py simulate_cluster`: the simulated cluster registers itself through register_cluster, inventory sync
reads its pools over HTTPS with its own CA, and the product's code never imports kubesim."""
from __future__ import annotations

import ast
import io
import socket
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from provisioning.models import Cluster, Node

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("portal", "intake", "provisioning", "chargeback", "register")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_simulated_cluster_registers_on_its_port_and_its_pools_are_synced(tmp_path):
    port = _free_port()
    out = io.StringIO()
    call_command("simulate_cluster", "--name", "sim-east", "--port", str(port), "--ca-dir", str(tmp_path),
                 "--ticks", "1", stdout=out)
    cluster = Cluster.objects.get(name="sim-east")
    assert cluster.applier == "kubernetes" and cluster.api_server == f"https://127.0.0.1:{port}"
    assert cluster.last_synced_at is not None
    assert (tmp_path / "ca.crt").read_text().startswith("-----BEGIN CERTIFICATE-----")
    pools = set(Node.objects.filter(cluster=cluster, present=True).values_list("pool__name", flat=True))
    assert {"h100-train", "h200-train", "h200-mig", "a100-mig-small", "l40s-shared", "h100-mps"} <= pools
    modes = set(Node.objects.filter(cluster=cluster).values_list("sharing_mode", flat=True))
    assert {"exclusive", "mig", "time_slicing", "mps"} <= modes
    assert "synced" in out.getvalue()


@pytest.mark.django_db
def test_the_simulated_cluster_refuses_to_start_when_the_portal_may_not_call_loopback(settings, tmp_path):
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(CommandError, match="PORTAL_OUTBOUND_ALLOWED_NETWORKS"):
        call_command("simulate_cluster", "--port", str(_free_port()), "--ca-dir", str(tmp_path), "--ticks", "1")
    assert not Cluster.objects.filter(api_server__contains="127.0.0.1").exists()


def test_no_product_module_imports_kubesim():
    offenders = []
    for package in PRODUCT_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(name == "kubesim" or name.startswith("kubesim.") for name in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []

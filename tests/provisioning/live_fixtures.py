"""Fixtures for the live-cluster tests: a fake API server with only the CRDs a realistic cluster has installed,
gpu-east registered against it, and a seeded GPU fleet (H100 with an NVLink clique, H200 and A100 under MIG mixed,
L40S time-sliced, a B200 DRA node with its ResourceSlice, a CPU node) with pods holding some of the GPUs.

Import the fixtures a module uses: `from tests.provisioning.live_fixtures import east_live  # noqa: F401`.
"""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from provisioning.models import Cluster
from kubesim import nodes as k
from kubesim.resources import CUSTOM_RESOURCES

VOLCANO = tuple(r for r in CUSTOM_RESOURCES if "volcano.sh" in r.api_version)

# Request ids that pods carry; tests create GpuRequest rows with these ids when they need owners.
H100_TRAIN_REQUEST = 901
H200_SERVING_REQUEST = 902


@pytest.fixture
def live_fake(start_fake_kube):
    """A fake v1.35.2 API server with Volcano's CRDs (and no KAI or Kueue)."""
    return start_fake_kube(git_version="v1.35.2", custom_resources=VOLCANO)


def _request_ids_past_the_fleets() -> None:
    """The fleet's pods carry request ids 901-904: requests a test creates must not get one of them (the ids of a
    whole test run keep growing), or those pods would count as theirs."""
    from django.db import connection

    from intake.models import GpuRequest

    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), GREATEST("
                       "(SELECT last_value FROM pg_sequences WHERE sequencename = %s), 1000))",
                       [GpuRequest._meta.db_table, f"{GpuRequest._meta.db_table}_id_seq"])


def seed_fleet(fake) -> dict:
    """The gpu-east fleet. Returns the seeded pods by name."""
    _request_ids_past_the_fleets()
    for ns in ("gpu-team-a", "gpu-team-b", "kube-system"):
        fake.put(k.namespace(ns))
    for i in (1, 2, 3, 4):
        fake.put(k.h100_node(f"gpu-h100-{i}"))
    fake.put(k.h200_mig_node("gpu-h200-1"))
    fake.put(k.h200_mig_node("gpu-h200-2"))
    fake.put(k.a100_mig_node("gpu-a100-1"))  # the declaration says 2 nodes
    fake.put(k.l40s_shared_node("gpu-l40s-1"))
    fake.put(k.l40s_shared_node("gpu-l40s-2"))
    fake.put(k.b200_dra_node("gpu-b200-1", pool=None))
    fake.put(k.resource_slice("gpu-b200-1"))
    fake.put(k.cpu_node("cpu-1"))
    pods = {
        # A 2-pod training gang holding all GPUs of gpu-h100-1 and gpu-h100-2.
        "train-0": k.gpu_pod("train-0", node="gpu-h100-1", resources={"nvidia.com/gpu": 8},
                             request_id=H100_TRAIN_REQUEST),
        "train-1": k.gpu_pod("train-1", node="gpu-h100-2", resources={"nvidia.com/gpu": 8},
                             request_id=H100_TRAIN_REQUEST),
        # Someone else's pod (not the portal's) on gpu-h100-3.
        "adhoc": k.gpu_pod("adhoc", namespace="gpu-team-b", node="gpu-h100-3", resources={"nvidia.com/gpu": 2}),
        # Inference on MIG slices.
        "serve-0": k.gpu_pod("serve-0", node="gpu-h200-1", resources={"nvidia.com/mig-1g.18gb": 1},
                             request_id=H200_SERVING_REQUEST),
        "serve-1": k.gpu_pod("serve-1", node="gpu-h200-1", resources={"nvidia.com/mig-3g.71gb": 1},
                             request_id=H200_SERVING_REQUEST),
        "notebook": k.gpu_pod("notebook", node="gpu-l40s-1", resources={"nvidia.com/gpu.shared": 1},
                              request_id=903),
        # Not holding anything: a pending pod and a finished one.
        "waiting": k.gpu_pod("waiting", node=None, phase="Pending", resources={"nvidia.com/gpu": 8}),
        "done": k.gpu_pod("done", node="gpu-h100-4", phase="Succeeded", resources={"nvidia.com/gpu": 8}),
        "dra-0": k.gpu_pod("dra-0", node="gpu-b200-1", resources={}, claims=["gpu"], request_id=904),
    }
    for pod in pods.values():
        fake.put(pod)
    fake.put(k.allocated_claim("dra-0-gpu", namespace="gpu-team-a", node="gpu-b200-1",
                               devices=["gpu-0", "gpu-1"], pod=pods["dra-0"]))
    return pods


@pytest.fixture
def east_live(inventory, live_fake):
    """gpu-east (declared as in the demo) registered against the fake, with the fleet seeded."""
    call_command("register_cluster", "gpu-east", "--server", live_fake.url, "--token", "test-token",
                 "--ca-cert-file", live_fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano",
                 stdout=StringIO())
    seed_fleet(live_fake)
    return Cluster.objects.get(name="gpu-east")

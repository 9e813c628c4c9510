"""Register fixtures: requests placed through the real services, inventory recorded through the real discovery
writer (`inventory_record`) from realistic nodes and pods, and a helper that builds one section."""
from __future__ import annotations

import pytest
from django.utils import timezone

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from provisioning.inventory_sync import ClusterObservation, inventory_record
from provisioning.models import Cluster
from register.sections.common import Snapshot
from kubesim import nodes as k

VOLCANO = [{"backend": "volcano", "api_group": "scheduling.volcano.sh", "versions": ["v1beta1"]}]

INFERENCE = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
             "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
            "image": "jupyter/base-notebook:latest"}
REGULATED_NOTEBOOK = {**NOTEBOOK, "data_sensitivity": "regulated"}


@pytest.fixture
def place(platform_user):
    """`place(user, team, name, answers, status)`: submit through the services, approve unless it is to stay
    pending, then put it in `status` (as reconciliation would)."""

    def make(user, team, name, answers, status="running") -> GpuRequest:
        gpu_request = request_submit(user=user, team=team, name=name, raw_answers=answers)
        if status != "pending_approval" and gpu_request.status == "pending_approval":
            request_approve(user=platform_user, request_id=gpu_request.pk)
        GpuRequest.objects.filter(pk=gpu_request.pk).update(status=status)
        return GpuRequest.objects.select_related("team").get(pk=gpu_request.pk)

    return make


def sync(cluster_name: str, *, nodes: list[dict], pods: list[dict] = (), slices: list[dict] = (),
         git_version: str = "v1.35.2", gang_schedulers=VOLCANO):
    """Record what an inventory sync of the cluster would have read (the real writer, no API server)."""
    cluster = Cluster.objects.get(name=cluster_name)
    return inventory_record(cluster_id=cluster.pk, observation=ClusterObservation(
        git_version=git_version, gang_schedulers=list(gang_schedulers), nodes=list(nodes), slices=list(slices),
        claims=[], pods=list(pods)))


def pod_of(gpu_request: GpuRequest, name: str, *, node: str, resources: dict[str, int]) -> dict:
    """A running pod of the request as the renderer labels it, on `node`."""
    return k.gpu_pod(name, namespace=f"gpu-{gpu_request.team.slug}", node=node, resources=resources,
                     request_id=gpu_request.pk, team=gpu_request.team.slug)


def build_section(module, *, now=None, days: int = 30) -> dict:
    """One section of the register, as the API would show it."""
    return module.build(Snapshot.load(now=now or timezone.now(), days=days)).as_dict()


def item(section: dict, subject: str) -> dict:
    found = [i for i in section["items"] if i["subject"] == subject]
    assert len(found) == 1, f"{subject!r} not in {[i['subject'] for i in section['items']]}"
    return found[0]

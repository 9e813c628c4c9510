"""A GPU model is sold as several SKUs with their own NVML names (H200 and H200 NVL, H100 SXM and PCIe). Given nodes
GFD labels with those names (served by the fake API server over HTTP), when the inventory is synced and an
engineer previews work that needs them, then the nodes are the model's, the pool and the pods are pinned to the
SKU the nodes carry, and a SKU the catalogue does not list is flagged at sync instead of silently dropped."""
from __future__ import annotations

from dataclasses import replace
from io import StringIO

import pytest
from django.core.management import call_command

from gpu.catalogue import load_catalogue, sanitise_product
from intake.decisions import Decision
from provisioning.inventory_sync import inventory_sync
from provisioning.manifests import render
from provisioning.models import Cluster, Node, NodePool
from kubesim import nodes as k
from tests.provisioning.live_fixtures import live_fake  # noqa: F401
from tests.provisioning.manifests.matrix import cases

pytestmark = pytest.mark.django_db

BIG_TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 100,
                "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


@pytest.fixture
def east(inventory, live_fake):
    call_command("register_cluster", "gpu-east", "--server", live_fake.url, "--token", "test-token", "--ca-cert-file", live_fake.ca_file,
                 "--kubernetes-version", "1.35", "--gang-scheduler", "volcano", stdout=StringIO())
    live_fake.put(k.namespace("gpu-team-a"))
    return Cluster.objects.get(name="gpu-east")


def synced(cluster):
    outcome = inventory_sync(cluster=cluster)
    assert outcome.status == "synced", outcome.message
    return Cluster.objects.get(pk=cluster.pk)


@pytest.mark.parametrize(("nvml", "label"), [
    ("NVIDIA H200 NVL", "NVIDIA-H200-NVL"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA-A100-80GB-PCIe"),
    ("NVIDIA  H100   PCIe", "NVIDIA-H100-PCIe"),  # runs of blanks are one '-'
    ("NVIDIA RTX PRO 6000 (Blackwell)", "NVIDIA-RTX-PRO-6000-Blackwell"),  # outside [A-Za-z0-9-_. ]: dropped
])
def test_product_labels_are_sanitised_as_gfd_does(nvml, label):
    assert sanitise_product(nvml) == label


def test_every_sku_of_the_catalogue_is_matched_by_its_label_and_its_dra_name():
    catalogue = load_catalogue()
    for model in catalogue.models.values():
        for sku in model.skus:
            assert catalogue.model_by_product(sanitise_product(sku)) is model
            assert catalogue.model_by_product(f"{sanitise_product(sku)}-SHARED") is model
            assert catalogue.model_by_dra_product_name(sku) is model


def test_h200_nvl_and_h100_pcie_nodes_are_their_models_in_pools_of_their_own_sku(east, live_fake):
    for i in (1, 2):
        live_fake.put(k.h200_nvl_node(f"gpu-nvl-{i}"))
    live_fake.put(k.h100_pcie_node("gpu-pcie-1"))

    synced(east)

    nvl = Node.objects.get(name="gpu-nvl-1")
    assert (nvl.gpu_model.key, nvl.gpu_count, nvl.usable) == ("H200-141GB", 4, True)
    pool = NodePool.objects.get(cluster=east, source="discovered", gpu_model__key="H200-141GB")
    assert (pool.name, pool.node_count) == ("h200-141gb-nvl", 2)
    assert pool.node_selector == {"nvidia.com/gpu.product": "NVIDIA-H200-NVL"}
    assert pool.discovered["gpu_product"] == "NVIDIA-H200-NVL"
    pcie = NodePool.objects.get(cluster=east, source="discovered", gpu_model__key="H100-80GB")
    assert pcie.name == "h100-80gb-h100-pcie"


def test_pods_placed_on_an_h200_nvl_pool_are_pinned_to_the_nvl_product(api, engineer, team_a, east, live_fake):
    live_fake.put(k.h200_nvl_node("gpu-nvl-1"))
    synced(east)

    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": BIG_TRAINING},
                                  format="json")

    assert response.status_code == 200, response.json()
    decision = Decision.from_json(response.json()["decision"])
    assert (decision.gpu_model, decision.node_pool) == ("H200-141GB", "h200-141gb-nvl")
    (job,) = [o for o in response.json()["manifests"] if o["kind"] == "Job"]
    assert job["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200-NVL"


def test_an_unknown_sku_is_flagged_at_sync_with_the_model_it_probably_is(east, live_fake):
    live_fake.put(k.gpu_node("gpu-h800-1", model="H100-80GB", sku="NVIDIA H800"))

    cluster = synced(east)

    (found,) = [d for d in cluster.discrepancies if d["field"] == "gpu_model"]
    assert found["discovered"] == "NVIDIA-H800"
    assert "Node gpu-h800-1 has GPUs the catalogue does not know (NVIDIA-H800)" in found["message"]
    assert "memory of H100-80GB (81559 MiB)" in found["message"] and "gpu-catalogue.yaml" in found["message"]
    assert not Node.objects.get(name="gpu-h800-1").pool


def test_a_declared_pool_whose_nodes_carry_two_skus_is_flagged(east, live_fake):
    live_fake.put(k.h100_node("gpu-h100-1"))
    live_fake.put(k.h100_pcie_node("gpu-h100-2", pool="h100-train"))

    synced(east)

    found = {d["field"]: d for d in NodePool.objects.get(name="h100-train").discrepancies}
    assert found["gpu_product"]["discovered"] == ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe"]
    assert "Split the pool by SKU" in found["gpu_product"]["message"]


def test_dra_claims_select_the_sku_the_pools_devices_publish():
    case = next(c for c in cases() if c.id == "whole_gpu-dra-none-1.36-inference-plain")
    pool = replace(case.cluster.pool, gpu_model="H200-141GB", gpu_product="NVIDIA-H200-NVL",
                   dra_product_name="NVIDIA H200 NVL")
    objects = render(case.request, replace(case.cluster, pool=pool))
    (template,) = [o for o in objects if o["kind"] == "ResourceClaimTemplate"]
    selectors = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    assert selectors[0]["cel"]["expression"] == "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200 NVL'"

"""Section 2, cluster-side requirements of DRA pools: given a DRA cluster under Kueue with time-sliced and MIG
pools, the register states the Kueue Configuration its pods need (deviceClassMappings for the DeviceClasses the
claims name), whether the NVIDIA driver's TimeSlicingSettings gate is declared, and which DeviceClasses serve
extended resources once discovery has read them."""
from __future__ import annotations

import pytest
from django.test import Client

from provisioning.inventory import cluster_declare
from provisioning.inventory_sync import ClusterObservation, inventory_record
from provisioning.models import Cluster
from register.sections import scheduling
from kubesim import nodes as k
from tests.register.conftest import build_section, item

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(db):
    return cluster_declare(
        name="gpu-lab", kubernetes_version="1.36", scheduling_model="dra", gang_scheduler="kueue", applier="gitops",
        pools=[
            {"name": "l40s-ts", "gpu_model": "L40S-48GB", "node_count": 1, "gpus_per_node": 4,
             "sharing_mode": "time_slicing", "time_slicing_replicas": 4},
            {"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "mig",
             "mig_layout": "all-balanced"},
        ],
    )  # fmt: skip


def requirements(section, subject="gpu-lab"):
    return {r["key"]: r for r in item(section, subject)["evidence"]["dra_requirements"]}


def test_a_kueue_dra_cluster_is_told_the_device_class_mappings_its_pods_need(lab):
    section = build_section(scheduling)

    found = requirements(section)
    assert found["kueue_device_class_mappings"]["config"] == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "resources": {"deviceClassMappings": [
            {"name": "gpu.nvidia.com/devices", "deviceClassNames": ["gpu.nvidia.com"]},
            {"name": "mig.nvidia.com/devices", "deviceClassNames": ["mig.nvidia.com"]},
        ]},
    }  # fmt: skip
    assert found["kueue_device_class_mappings"]["met"] is None  # Kueue's ConfigMap is not read
    assert found["dra_time_slicing_gate"]["met"] is False
    assert "is not declared: time-sliced claims carry no GpuConfig sharing settings" in (
        found["dra_time_slicing_gate"]["text"])
    assert found["dra_extended_resource"]["met"] is False
    notes = item(section, "gpu-lab")["notes"]
    assert any(n.startswith("Kueue admits the DRA pods only if its Configuration maps gpu.nvidia.com, mig.nvidia.com")
               for n in notes)


def test_declared_gates_and_discovered_device_classes_are_shown_as_met(lab):
    Cluster.objects.filter(pk=lab.pk).update(dra_feature_gates=["TimeSlicingSettings"])
    inventory_record(cluster_id=lab.pk, observation=ClusterObservation(
        git_version="v1.36.1", gang_schedulers=[], nodes=[], device_classes=k.nvidia_device_classes()))

    found = requirements(build_section(scheduling))

    assert found["dra_time_slicing_gate"]["met"] is True
    assert found["dra_extended_resource"]["met"] is True
    assert found["dra_extended_resource"]["text"].startswith(
        "DeviceClasses serve extended resources: nvidia.com/gpu (gpu.nvidia.com).")


def test_device_plugin_clusters_have_no_dra_requirements(inventory):
    assert item(build_section(scheduling), "gpu-east")["evidence"]["dra_requirements"] == []


def test_before_1_36_extended_resources_are_not_served(lab):
    Cluster.objects.filter(pk=lab.pk).update(kubernetes_version="1.35")
    found = requirements(build_section(scheduling))
    assert found["dra_extended_resource"]["met"] is False
    assert found["dra_extended_resource"]["text"].startswith("Kubernetes 1.35: DRAExtendedResource is alpha and off")


def test_the_register_page_shows_the_requirements_to_the_platform_team(lab, engineer, platform_user):
    client = Client()
    client.force_login(engineer)
    assert client.get("/register/").status_code == 403
    client.force_login(platform_user)

    page = client.get("/register/").content.decode()

    assert "Kueue admits the DRA pods only if its Configuration maps gpu.nvidia.com, mig.nvidia.com in " \
           "resources.deviceClassMappings" in page
    assert "Driver gate TimeSlicingSettings (alpha, off by default) is not declared" in page


def test_a_kueue_cluster_with_gb200_pools_is_told_to_map_the_imex_channel_class_too(db):
    # Device-plugin GPUs, but every gang pod claims its ComputeDomain's IMEX channel: a DRA claim Kueue must map
    # (kueue v0.19.2 pkg/dra/claims.go: "DeviceClass ... is not mapped in DRA configuration").
    cluster_declare(
        name="gpu-nvl", kubernetes_version="1.36", scheduling_model="device_plugin", gang_scheduler="kueue",
        applier="gitops", pools=[{"name": "gb200", "gpu_model": "GB200-186GB", "node_count": 18, "gpus_per_node": 4,
                                  "sharing_mode": "exclusive", "nvlink_domain": "0f1e2d3c-4b5a-6978.1"}],
    )  # fmt: skip

    found = requirements(build_section(scheduling), "gpu-nvl")

    assert found["kueue_device_class_mappings"]["config"]["resources"]["deviceClassMappings"] == [
        {"name": "compute-domain.nvidia.com/channels", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]},
    ]
    assert "IMEX channel claim names compute-domain-default-channel.nvidia.com" in (
        found["kueue_device_class_mappings"]["text"])
    assert "dra_extended_resource" not in found  # no DRA pool: nothing else applies

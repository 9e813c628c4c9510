"""Issue 11, must show: a new user registers a device-plugin cluster, a DRA cluster (ResourceSlices), a Kueue
cluster and a GB200-style (multi-node NVLink) cluster, each served by the fake API server over HTTPS, and previews
the same training request through the API. On each, the objects are schema-valid and schedulable on the nodes,
DeviceClasses and ResourceSlices the fake serves (tests/support/semantic.py), and the decision's reasons say why the
objects differ.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.decisions import Decision
from kubesim import nodes as k
from kubesim.resources import CUSTOM_RESOURCES
from provisioning.inventory import cluster_declare
from provisioning.inventory_sync import inventory_sync
from provisioning.manifests.validation import validate_objects
from provisioning.models import Cluster
from tests.support.fake_kube import serving
from tests.support.semantic import (
    CHANNEL_DEVICE_CLASS,
    COMPUTE_DOMAIN_CRD,
    Admitted,
    Inventory,
    assert_schedulable,
)

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 150,
            "gpus_per_replica": 4, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
GB200_CLIQUE = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.1"
SCHEDULERS = {"volcano": "volcano", "kai": "kai-scheduler"}


def _served(*groups):
    return tuple(r for r in CUSTOM_RESOURCES if any(g in r.api_version for g in groups))


def _device_plugin():
    return [k.h100_node(f"dp-h100-{i}", pool=None) for i in (1, 2)], [], []


def _dra():
    nodes = [k.dra_only_node(f"dra-b200-{i}", pool="b200-train") for i in (1, 2)]
    # Classes without extendedResourceName: pods get claims of their own from a template.
    classes = [k.device_class("gpu.nvidia.com"), k.device_class("mig.nvidia.com", device_type="mig")]
    return nodes, classes, [k.resource_slice(n["metadata"]["name"], driver="580.65.06") for n in nodes]


def _gb200():
    nodes = [k.gpu_node(f"gb200-{i}", model="GB200-186GB", gpus=4, driver="580.65.06", taints=[],
                        extra_labels={"nvidia.com/gpu.clique": GB200_CLIQUE}) for i in (1, 2)]  # fmt: skip
    return nodes, [k.device_class(CHANNEL_DEVICE_CLASS, device_type="channel")], []


# name -> (Kubernetes, scheduling model, gang scheduler, Kueue ClusterQueue, CRD groups the fake serves, what it holds,
# declared GPU model of the pool or None to discover it)
CLUSTERS = {
    "device_plugin": ("1.36", "device_plugin", "volcano", "", ("volcano.sh",), _device_plugin, None),
    "dra": ("1.36", "dra", "volcano", "", ("volcano.sh",), _dra, "B200-180GB"),
    "kueue": ("1.36", "dra", "kueue", "lab", ("kueue.x-k8s.io",), _dra, "B200-180GB"),
    "gb200": ("1.36", "device_plugin", "volcano", "", ("volcano.sh", "resource.nvidia.com"), _gb200, None),
}


def _preview_on(name, api, engineer, team_a):
    version, model, gang, queue, groups, build, declared_model = CLUSTERS[name]
    with serving(git_version=f"v{version}.1", custom_resources=_served(*groups)) as fake:
        nodes, classes, slices = build()
        pools = []
        if declared_model:  # DRA pools are declared: discovery reads their devices from the ResourceSlices
            pools = [{"name": "b200-train", "gpu_model": declared_model, "node_count": 2, "gpus_per_node": 8,
                      "sharing_mode": "exclusive", "node_selector": {"gpu-portal.io/pool": "b200-train"}}]
        cluster_declare(name=f"gpu-{name.replace('_', '-')}", kubernetes_version=version, scheduling_model=model,
                        gang_scheduler=gang, gang_queue=queue, applier="gitops", pools=pools)
        call_command("register_cluster", f"gpu-{name.replace('_', '-')}", "--server", fake.url, "--token", "t",
                     "--ca-cert-file", fake.ca_file, "--kubernetes-version", version, "--gang-scheduler", gang,
                     stdout=StringIO())  # fmt: skip
        for obj in [*nodes, *classes, *slices]:
            fake.put(obj)
        outcome = inventory_sync(cluster=Cluster.objects.get(name=f"gpu-{name.replace('_', '-')}"))
        assert outcome.status == "synced", outcome.message
        response = api(engineer).post("/api/v1/intake/preview/", {"team": team_a.slug, "answers": TRAINING,
                                                                   "name": "pretrain"}, format="json")
        assert response.status_code == 200, response.json()
    inventory = Inventory(
        nodes=tuple(nodes), device_classes=tuple(classes), resource_slices=tuple(slices),
        gpu_node_scheduler=SCHEDULERS.get(gang, "default-scheduler"),
        crds=frozenset({COMPUTE_DOMAIN_CRD} if "resource.nvidia.com" in groups else ()),
        cluster_queues=frozenset({queue} - {""}),
    )  # fmt: skip
    return response.json(), inventory, version


def _pod(objects):
    return objects[-1]["spec"]["template"]["spec"]


def _reason(decision, field):
    return next(r.text for r in decision.reasons if r.field == field)


def _kinds(objects):
    return [o["kind"] for o in objects]


@pytest.mark.parametrize("name", list(CLUSTERS))
def test_the_same_request_schedules_on_each_cluster_and_the_reasons_say_why_it_differs(name, api, engineer, team_a):
    body, inventory, version = _preview_on(name, api, engineer, team_a)
    decision, objects = Decision.from_json(body["decision"]), body["manifests"]

    assert validate_objects(objects, version) == len(objects)
    # team-a has no GPU quota here, so no ResourceQuota is rendered; approval admits a gang of 2.
    assert_schedulable(objects, inventory, Admitted(quota={}, team_gpus=0, gang_size=2))
    pod = _pod(objects)
    limits = pod["containers"][0]["resources"]["limits"]
    if name == "device_plugin":
        assert (decision.gpu_model, decision.scheduling_model) == ("H100-80GB", "device_plugin")
        assert limits["nvidia.com/gpu"] == "4" and "resourceClaims" not in pod
        assert pod["schedulerName"] == "volcano" and "PodGroup" in _kinds(objects)
        assert "through Volcano" in _reason(decision, "gang")
    elif name == "dra":
        assert (decision.gpu_model, decision.scheduling_model) == ("B200-180GB", "dra")
        assert not any(key.startswith("nvidia.com/") for key in limits)
        template = next(o for o in objects if o["kind"] == "ResourceClaimTemplate")
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.nvidia.com"
        assert pod["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]
        assert pod["schedulerName"] == "volcano"
        assert "Dynamic Resource Allocation claims" in _reason(decision, "scheduling_model")
    elif name == "kueue":
        job = objects[-1]
        assert job["spec"]["suspend"] is True and "kueue.x-k8s.io/queue-name" in job["metadata"]["labels"]
        assert "schedulerName" not in pod and "PodGroup" not in _kinds(objects)
        assert "LocalQueue" in _kinds(objects) and "ResourceClaimTemplate" in _kinds(objects)
        assert all("resourceClaimName" not in claim for claim in pod["resourceClaims"])
        assert "through Kueue" in _reason(decision, "gang")
    else:
        assert decision.gpu_model == "GB200-186GB"
        (domain,) = [o for o in objects if o["kind"] == "ComputeDomain"]
        channel = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
        assert {"name": "imex", "resourceClaimTemplateName": channel} in pod["resourceClaims"]
        assert limits["nvidia.com/gpu"] == "4"
        terms = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms[0]["topologyKey"] == "nvidia.com/gpu.clique"
        assert "ComputeDomain" in _reason(decision, "compute_domain")

"""DRA paths as a real cluster runs them, through the API and the services: given a DRA cluster under Kueue with
time-sliced, whole-GPU and MIG pools, when requests are placed, rendered, quota'd and metered, then every pod gets a
claim of its own from a template (Kueue admits no pod naming a ResourceClaim), the driver's time-slicing config
appears only where its gate is declared, the namespace quota counts DRA devices per DeviceClass as approval counts
GPU equivalents, and a time-sliced DRA replica is billed and quota'd for the whole devices its claim holds."""
from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from chargeback.models import UsageInterval
from chargeback.services import usage_ingest
from workflows.services import request_submit
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.manifests.validation import validate_objects
from provisioning.models import Cluster
from provisioning.selectors import team_quota_state

pytestmark = pytest.mark.django_db

DEV = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
       "image": "jupyter/base-notebook:latest"}


def lab_cluster(**changes) -> Cluster:
    """gpu-lab: Kubernetes 1.36 on DRA, Kueue, a time-sliced L40S pool, whole H200s and H200 MIG slices."""
    spec = {
        "name": "gpu-lab", "kubernetes_version": "1.36", "scheduling_model": "dra", "gang_scheduler": "kueue",
        "gang_queue": "lab", "applier": "gitops",
        "pools": [
            {"name": "l40s-ts", "gpu_model": "L40S-48GB", "node_count": 2, "gpus_per_node": 4,
             "sharing_mode": "time_slicing", "time_slicing_replicas": 4, "node_selector": {"gpu-portal.io/pool": "l40s-ts"}},
            {"name": "h200-whole", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "node_selector": {"gpu-portal.io/pool": "h200-whole"}},
            {"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "mig",
             "mig_layout": "all-balanced", "node_selector": {"gpu-portal.io/pool": "h200-mig"}},
        ],
        **changes,
    }  # fmt: skip
    return cluster_declare(pools=spec.pop("pools"), **spec)


def manifests(api, user, gpu_request) -> list[dict]:
    response = api(user).get(f"/api/v1/requests/{gpu_request.pk}/manifests/")
    assert response.status_code == 200, response.content
    return response.json()


def pod_template(objects) -> dict:
    (workload,) = [o for o in objects if o["kind"] in ("Job", "Deployment")]
    return workload["spec"]["template"]


def test_a_time_sliced_request_on_kueue_dra_gets_a_claim_template_and_goes_through_kueue(api, engineer, team_a):
    lab_cluster(dra_feature_gates=["TimeSlicingSettings"])
    notebook = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=DEV)
    assert (notebook.decision.cluster, notebook.decision.node_pool) == ("gpu-lab", "l40s-ts")

    objects = manifests(api, engineer, notebook)

    kinds = [o["kind"] for o in objects]
    assert "ResourceClaimTemplate" in kinds and "ResourceClaim" not in kinds
    template = next(o for o in objects if o["kind"] == "ResourceClaimTemplate")
    assert pod_template(objects)["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    # Every GPU workload of a Kueue cluster goes through the team's LocalQueue (issue 23 item 7), and Kueue's DRA
    # integration takes no claim config (kueue v0.19.2 docs, Dynamic Resource Allocation, Limitations): the
    # declared TimeSlicingSettings gate adds none. The claim holds its GPU whole either way (manifests/devices.py).
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-team-a"
    assert "config" not in template["spec"]["spec"]["devices"]
    assert validate_objects(objects, "1.36") == len(objects)


def test_the_time_slicing_config_follows_the_declared_driver_gate(api, engineer, team_a):
    cluster = lab_cluster(gang_scheduler="none")
    notebook = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=DEV)
    claim = lambda: next(o for o in manifests(api, engineer, notebook)  # noqa: E731
                         if o["kind"] == "ResourceClaimTemplate")["spec"]["spec"]["devices"]
    # The driver rejects GpuConfig sharing TimeSlicing at prepare time while TimeSlicingSettings is off.
    assert "config" not in claim()

    cluster.dra_feature_gates = ["TimeSlicingSettings"]
    cluster.save(update_fields=["dra_feature_gates"])

    (config,) = claim()["config"]
    assert config["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"
    assert api(engineer).get("/api/v1/clusters/").json()["results"][0]["dra_feature_gates"] == ["TimeSlicingSettings"]


def test_an_unknown_driver_gate_is_refused_by_field(tmp_path):
    path = tmp_path / "clusters.yaml"
    path.write_text(yaml.safe_dump([{"name": "gpu-lab", "scheduling_model": "dra",
                                     "dra_feature_gates": ["TimeSlicing"], "pools": []}]))
    with pytest.raises(CommandError, match=r"dra_feature_gates: Unknown NVIDIA DRA driver feature gate\(s\): "
                                           r"TimeSlicing; known \(driver v0.4.1\): TimeSlicingSettings"):
        call_command("declare_clusters", str(path), stdout=StringIO())
    assert not Cluster.objects.filter(name="gpu-lab").exists()


def test_a_time_sliced_dra_replica_counts_and_bills_the_devices_its_claim_holds(api, engineer, team_a, platform_user):
    lab_cluster()
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=2)
    notebook = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=DEV)

    # One L40S held by the pod's own claim is one GPU equivalent, not a quarter: nothing shares it.
    assert notebook.decision.gpu_equivalents == 1.0
    fit = api(engineer).get(f"/api/v1/requests/{notebook.pk}/fit/").json()
    assert fit["demand"]["pods"] == 1 and fit["demand"]["resource"] == "gpu.nvidia.com/gpu"
    # Auto-approved, it holds its GPU: half of the team's 2 GPU equivalents of time-slicing.
    assert team_quota_state(team=team_a, strategy="time_slicing", requested=0).held == Decimal(1)

    # Metering prices the pod from the annotation the renderer wrote, checked against the pool.
    template = pod_template(manifests(api, engineer, notebook))
    assert template["metadata"]["annotations"]["gpu-portal.io/gpu-equivalents"] == "1.000000"
    pod = {
        "metadata": {"uid": "pod-uid-1", "namespace": "gpu-team-a", "name": "notebook-0", **template["metadata"]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "main", "state": {"running": {"startedAt": "2026-11-02T08:00:00Z"}}}]},
    }
    usage_ingest(cluster_name="gpu-lab", pods=[pod], now=datetime(2026, 11, 2, 10, tzinfo=timezone.utc))
    (interval,) = UsageInterval.objects.all()
    assert (interval.devices, interval.equivalents_num, interval.equivalents_den) == (1, 1, 1)
    assert "equivalents_mismatch" not in interval.flags


def test_the_namespace_quota_on_dra_counts_devices_per_device_class(api, engineer, team_a):
    lab_cluster()
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=4)
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=2)
    team_quota_set(team=team_a, strategy="mig", gpu_equivalents=2)
    notebook = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=DEV)

    (quota,) = [o for o in manifests(api, engineer, notebook) if o["kind"] == "ResourceQuota"]

    assert quota["spec"]["hard"] == {
        # 4 whole GPUs + 2 time-sliced requests' devices: both are gpu.nvidia.com devices.
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "6",
        # 2 GPUs of MIG: at most 14 1g.18gb slices of an H200 (the smallest profile all-balanced offers); the
        # 2g and 3g profiles share the class, and their devices reach the quota's equivalents first.
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "14",
    }


def _quota(api, user, team, name="notebook", **answers) -> dict:
    notebook = request_submit(user=user, team=team, name=name, raw_answers={**DEV, **answers})
    (quota,) = [o for o in manifests(api, user, notebook) if o["kind"] == "ResourceQuota"]
    return quota["spec"]["hard"]


def test_mps_claims_have_a_quota_line_of_their_own(api, engineer, team_a):
    # An MPS claim holds whole gpu.nvidia.com devices: a team with only an MPS quota is capped there (not unlimited
    # through kubectl), and in a mixed team MPS pods do not eat the whole-GPU cap.
    cluster = lab_cluster(dra_mps_support=True)
    cluster_declare(name="gpu-lab", dra_mps_support=True, pools=[
        {"name": "h200-mps", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8, "sharing_mode": "mps",
         "time_slicing_replicas": 4, "node_selector": {"gpu-portal.io/pool": "h200-mps"}}])
    assert cluster.pools.count() == 4
    team_quota_set(team=team_a, strategy="mps", gpu_equivalents=2)
    assert _quota(api, engineer, team_a) == {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "2"}

    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=4)
    assert _quota(api, engineer, team_a, "notebook-2")["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "6"


@pytest.mark.parametrize(("version", "gpus"), [("1.36", "38"), ("1.35", "16")])
def test_on_a_mixed_cluster_the_extended_resource_quota_holds_the_dra_claims_too(api, engineer, team_a, version, gpus):
    # KEP-5004 ("Resource Quota"): from 1.36 claims of gpu.nvidia.com, which declares extendedResourceName
    # nvidia.com/gpu, count against requests.nvidia.com/gpu as well as against their class. The device plugin's cap
    # (16) and the class's (22) must fit together in that key, or 16 + 22 become 16 in all; like every cap, each side
    # alone allows the whole quota, and approval holds the exact figure per strategy.
    cluster = cluster_declare(name="gpu-mixed", kubernetes_version=version, scheduling_model="device_plugin",
                              gang_scheduler="none", applier="gitops", pools=[
        {"name": "h100", "gpu_model": "H100-80GB", "node_count": 4, "gpus_per_node": 8, "sharing_mode": "exclusive"},
        {"name": "h200-dra", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 8,
         "sharing_mode": "exclusive", "scheduling_model": "dra"},
        {"name": "l40s-ts", "gpu_model": "L40S-48GB", "node_count": 1, "gpus_per_node": 4, "sharing_mode": "time_slicing",
         "time_slicing_replicas": 4, "scheduling_model": "dra"}])  # fmt: skip
    # The NVIDIA chart's classes as inventory sync records them (templates/deviceclass-gpu.yaml, -mig.yaml).
    Cluster.objects.filter(pk=cluster.pk).update(dra_device_classes=[
        {"name": "gpu.nvidia.com", "extended_resource_name": "nvidia.com/gpu"},
        {"name": "mig.nvidia.com", "extended_resource_name": ""}])
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=16)
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=6)

    hard = _quota(api, engineer, team_a, gpu_memory_gb=60, tenancy="dedicated")

    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "22"  # 16 whole + 6 time-sliced claims
    assert hard["requests.nvidia.com/gpu"] == gpus

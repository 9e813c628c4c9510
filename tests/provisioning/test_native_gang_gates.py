"""The native Workload API on Kubernetes 1.37: off by default (`GenericWorkload`), so a cluster must declare it.

Given a 1.37 cluster with the native gang scheduler, when the platform team registers it without the gate (the
register_cluster and declare_clusters commands, the admin form), then it is refused on `feature_gates`; when a
cluster row without the gate exists anyway (declared before the rule), then the preview is a 400 on `replicas`
naming the field, not objects the API server would reject. With the gate declared, the gang renders as
`scheduling.k8s.io/v1beta1` Workload + PodGroup, valid for 1.37.
"""
from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from provisioning.inventory import cluster_declare
from provisioning.manifests.validation import validate_objects
from provisioning.models import Cluster, GpuModel, NodePool

pytestmark = pytest.mark.django_db

GANG = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
        "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
POOL = {"name": "h200", "gpu_model": "H200-141GB", "node_count": 2, "gpus_per_node": 8, "sharing_mode": "exclusive"}


def test_register_cluster_refuses_native_on_1_37_without_the_gate_and_accepts_it_with():
    args = ["register_cluster", "lab", "--gitops-repo", "/tmp/lab-repo", "--kubernetes-version", "1.37",
            "--gang-scheduler", "native"]
    with pytest.raises(CommandError, match=r"feature_gates: .*GenericWorkload feature gate, which is off by default"):
        call_command(*args)
    assert not Cluster.objects.exists()

    call_command(*args, "--feature-gate", "GenericWorkload")
    assert Cluster.objects.get(name="lab").feature_gates == ["GenericWorkload"]


def test_register_cluster_refuses_an_unknown_gate():
    with pytest.raises(CommandError, match="feature_gates: Unknown feature gate"):
        call_command("register_cluster", "lab", "--gitops-repo", "/tmp/lab-repo", "--feature-gate", "Bogus")


def test_declare_clusters_refuses_native_on_1_37_without_the_gate(tmp_path):
    path = tmp_path / "clusters.yaml"
    path.write_text("- name: lab\n  kubernetes_version: '1.37'\n  gang_scheduler: native\n  pools: []\n")
    with pytest.raises(CommandError, match=r"cluster lab: feature_gates: .*GenericWorkload"):
        call_command("declare_clusters", str(path))
    assert not Cluster.objects.exists()


def _admin_form(**fields):
    form = {"name": "lab", "description": "", "kubernetes_version": "1.37", "scheduling_model": "device_plugin",
            "gang_scheduler": "native", "gang_queue": "", "applier": "gitops", "api_server": "",
            "gitops_repo": "/tmp/lab-repo", "enabled": "on", "feature_gates": "[]", "gang_topology_key": "",
            "gang_topology_name": "", "pools-TOTAL_FORMS": "0", "pools-INITIAL_FORMS": "0",
            "pools-MIN_NUM_FORMS": "0", "pools-MAX_NUM_FORMS": "1000"}
    form.update(fields)
    return form


def test_the_admin_form_shows_the_refusal_on_the_feature_gates_field(platform_user):
    client = Client()
    client.force_login(platform_user)

    response = client.post("/admin/provisioning/cluster/add/", _admin_form())

    assert response.status_code == 200  # the form again, with the error
    errors = response.context["adminform"].form.errors
    assert "GenericWorkload" in errors["feature_gates"][0]
    assert not Cluster.objects.exists()
    response = client.post("/admin/provisioning/cluster/add/", _admin_form(feature_gates='["GenericWorkload"]'))
    assert response.status_code == 302 and Cluster.objects.get(name="lab").feature_gates == ["GenericWorkload"]


def _legacy_cluster(**fields):
    """A row written without validation, as rows from before the rule were."""
    cluster = Cluster.objects.create(name="lab", kubernetes_version="1.37", gang_scheduler="native",
                                     applier="gitops", gitops_repo="/tmp/lab-repo", **fields)
    spec = dict(POOL)
    NodePool.objects.create(cluster=cluster, gpu_model=GpuModel.objects.get(key=spec.pop("gpu_model")), **spec)
    return cluster


def test_preview_on_an_undeclared_1_37_native_cluster_is_a_400_naming_the_field(api, engineer, team_a):
    _legacy_cluster()

    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": GANG}, format="json")

    assert response.status_code == 400, response.json()
    message = response.json()["answers"]["replicas"][0]
    assert "GenericWorkload" in message and "feature_gates" in message


def test_with_the_gate_the_gang_is_v1beta1_and_valid_for_1_37(api, engineer, team_a):
    cluster_declare(name="lab", kubernetes_version="1.37", gang_scheduler="native", applier="gitops",
                    gitops_repo="/tmp/lab-repo", feature_gates=["GenericWorkload"], pools=[POOL])

    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "name": "llm", "answers": GANG},
                                  format="json")

    assert response.status_code == 200, response.json()
    manifests = response.json()["manifests"]
    kinds = {(m["apiVersion"], m["kind"]) for m in manifests}
    assert {("scheduling.k8s.io/v1beta1", "Workload"), ("scheduling.k8s.io/v1beta1", "PodGroup")} <= kinds
    job = next(m for m in manifests if m["kind"] == "Job")
    assert job["spec"]["template"]["spec"]["schedulingGroup"] == {"podGroupName": "llm-r0-workers"}
    assert validate_objects(manifests, "1.37") == len(manifests)


# --- 1.35 and 1.36: two alpha gates, both off (KEP-4671) -----------------------------------------------------------

@pytest.mark.parametrize(("version", "gates", "missing"), [
    ("1.35", [], "GenericWorkload and GangScheduling"),
    ("1.35", ["GenericWorkload"], "GangScheduling"),  # the API is served, but the pods would start one by one
    ("1.36", ["GangScheduling"], "GenericWorkload"),
])
def test_register_cluster_refuses_native_on_1_35_and_1_36_without_both_alpha_gates(version, gates, missing):
    args = ["register_cluster", "lab", "--gitops-repo", "/tmp/lab-repo", "--kubernetes-version", version,
            "--gang-scheduler", "native", *[a for gate in gates for a in ("--feature-gate", gate)]]
    with pytest.raises(CommandError, match=rf"feature_gates: .*needs the {missing} feature gate"):
        call_command(*args)
    assert not Cluster.objects.exists()

    call_command(*args, *[a for gate in ("GenericWorkload", "GangScheduling") if gate not in gates
                          for a in ("--feature-gate", gate)])
    assert set(Cluster.objects.get(name="lab").feature_gates) == {"GenericWorkload", "GangScheduling"}


def test_the_renderer_refuses_a_1_36_native_gang_with_only_the_api_gate():
    from dataclasses import replace

    from provisioning.manifests import RenderError, render_all
    from tests.provisioning.manifests.matrix import cases

    case = next(c for c in cases() if c.id == "whole_gpu-device_plugin-native-1.36-training_gang-plain")
    render_all(case.team, case.request, case.cluster)  # both gates declared: the v1alpha2 gang renders
    with pytest.raises(RenderError, match="without GangScheduling the scheduler would start the pods one by one"):
        render_all(case.team, case.request, replace(case.cluster, feature_gates=("GenericWorkload",)))


def test_preview_on_an_undeclared_1_35_native_cluster_is_a_400_naming_both_gates(api, engineer, team_a):
    cluster = _legacy_cluster()
    Cluster.objects.filter(pk=cluster.pk).update(kubernetes_version="1.35")

    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": GANG}, format="json")

    assert response.status_code == 400, response.json()
    message = response.json()["answers"]["replicas"][0]
    assert "GenericWorkload and GangScheduling" in message and "feature_gates" in message

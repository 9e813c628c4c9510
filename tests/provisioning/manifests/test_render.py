"""Rules of the renderer, one behaviour per test: refusals, resource names, claims, gang marks, order."""

from __future__ import annotations

from dataclasses import replace

import pytest

from provisioning.manifests import RenderError, render, render_all, render_team, selector_for_request
from provisioning.manifests.spec import GangSpec

from .matrix import cases, make_team

CASES = {case.id: case for case in cases()}


def _case(case_id):
    return CASES[case_id]


def _kinds(objects):
    return [o["kind"] for o in objects]


def _pod(objects):
    (workload,) = [o for o in objects if o["kind"] in ("Job", "Deployment")]
    return workload["spec"]["template"]


def _render(case_id, request_changes=None, cluster_changes=None, pool_changes=None):
    case = _case(case_id)
    request = replace(case.request, **(request_changes or {}))
    cluster = case.cluster
    if pool_changes:
        cluster = replace(cluster, pool=replace(cluster.pool, **pool_changes))
    cluster = replace(cluster, **(cluster_changes or {}))
    return render(request, cluster)


# --- refusals ----------------------------------------------------------------------------------------------------


def test_native_gang_on_1_34_is_refused_with_a_way_out():
    with pytest.raises(RenderError, match=r"1\.34, which has no native gang scheduling.*Volcano, KAI or Kueue"):
        _render("whole_gpu-device_plugin-native-1.34-training_gang-plain")


def test_gang_on_a_cluster_without_gang_scheduler_is_refused():
    with pytest.raises(RenderError, match="no gang scheduler"):
        _render("whole_gpu-device_plugin-none-1.36-training_gang-plain")


def test_gang_backend_that_the_cluster_does_not_run_is_refused():
    with pytest.raises(RenderError, match="re-run placement"):
        _render("whole_gpu-device_plugin-kai-1.36-training_gang-plain", cluster_changes={"gang_scheduler": "volcano"})


def test_gang_on_a_deployment_is_refused():
    with pytest.raises(RenderError, match="training Jobs only"):
        _render("whole_gpu-device_plugin-kai-1.36-inference-plain", request_changes={"gang": GangSpec(2, "kai")})


def test_gang_minimum_above_replicas_is_refused():
    with pytest.raises(RenderError, match="between 1 and the number of replicas"):
        _render("whole_gpu-device_plugin-kai-1.36-training_gang-plain", request_changes={"gang": GangSpec(9, "kai")})


def test_multi_replica_development_is_refused():
    with pytest.raises(RenderError, match="single replica"):
        _render("whole_gpu-device_plugin-none-1.36-development-plain", request_changes={"replicas": 2})


def test_pool_with_another_sharing_mode_is_refused():
    with pytest.raises(RenderError, match="shares GPUs as 'exclusive'"):
        _render(
            "whole_gpu-device_plugin-none-1.36-inference-plain",
            request_changes={"strategy": "mig", "mig_profile": "1g.18gb"},
        )


def test_mig_single_without_a_layout_is_refused():
    with pytest.raises(RenderError, match="no mig_layout"):
        _render("mig_single-device_plugin-none-1.36-inference-plain", pool_changes={"mig_layout": ""})


@pytest.mark.parametrize("version", ["1.33", "1.38", "latest"])
def test_unsupported_kubernetes_version_is_refused(version):
    with pytest.raises(RenderError, match="not supported"):
        _render("whole_gpu-device_plugin-none-1.36-inference-plain", cluster_changes={"kubernetes_version": version})


def test_conflicting_node_labels_are_refused():
    with pytest.raises(RenderError, match="nvidia.com/gpu.product must be both"):
        _render(
            "whole_gpu-device_plugin-none-1.36-inference-plain",
            pool_changes={"node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
        )


def test_render_all_refuses_a_request_of_another_team():
    case = _case("whole_gpu-device_plugin-none-1.36-inference-plain")
    with pytest.raises(RenderError, match="belongs to team"):
        render_all(replace(case.team, slug="other"), case.request, case.cluster)


# --- device plugin ----------------------------------------------------------------------------------------------


def test_mig_mixed_requests_the_profile_resource_and_rewrites_plus_me():
    pod = _pod(
        _render("mig_mixed-device_plugin-none-1.36-inference-plain", request_changes={"mig_profile": "1g.18gb+me"})
    )
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.18gb.me"] == "2"
    assert pod["metadata"]["annotations"]["gpu-portal.example.com/mig-profile"] == "1g.18gb+me"


def test_mig_single_requests_gpu_on_nodes_with_the_pool_layout():
    pod = _pod(_render("mig_single-device_plugin-none-1.36-inference-plain"))["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert pod["nodeSelector"]["nvidia.com/mig.config"] == "all-1g.18gb"
    assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200-MIG-1g.18gb"


def test_time_slicing_renamed_uses_the_shared_resource():
    pod = _pod(_render("ts_renamed-device_plugin-none-1.36-development-plain"))["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    assert pod["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "p5e.48xlarge",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/device-plugin.config": "ts-4",
        "nvidia.com/gpu.product": "NVIDIA-H200",
    }


def test_time_slicing_not_renamed_pins_the_shared_product_label():
    pod = _pod(_render("ts_plain-device_plugin-none-1.36-development-plain"))["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H200-SHARED"


# --- DRA --------------------------------------------------------------------------------------------------------


def test_dra_whole_gpu_uses_a_claim_template_per_pod():
    objects = _render("whole_gpu-dra-none-1.36-training_single-plain")
    template = objects[0]
    assert template["kind"] == "ResourceClaimTemplate"
    exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "gpu.nvidia.com" and exactly["count"] == 2
    assert exactly["selectors"] == [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"}}
    ]
    pod = _pod(objects)["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert not [k for k in pod["containers"][0]["resources"]["limits"] if k.startswith("nvidia.com/")]


def test_dra_mig_selects_profile_and_parent_product_and_driver_floor():
    objects = _render("mig_mixed-dra-none-1.36-inference-exclusive_clique_driver")
    exactly = objects[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "mig.nvidia.com"
    expressions = [s["cel"]["expression"] for s in exactly["selectors"]]
    assert "device.attributes['gpu.nvidia.com'].profile == '1g.18gb'" in expressions
    assert "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'" in expressions
    assert any("driverVersion.major() >= 550" in e for e in expressions)


def test_dra_time_slicing_gives_each_replica_a_claim_of_its_own():
    # A shared ResourceClaim pinned every replica to one allocation and was refused by Kueue.
    objects = _render("ts_renamed-dra-none-1.36-inference-plain")
    assert [o["kind"] for o in objects if o["kind"].startswith("ResourceClaim")] == ["ResourceClaimTemplate"]
    template = objects[0]
    assert _pod(objects)["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}
    ]
    exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "gpu.nvidia.com" and exactly["count"] == 1


def test_dra_time_slicing_config_only_where_the_driver_gate_is_declared():
    # Without TimeSlicingSettings the driver rejects GpuConfig sharing TimeSlicing when it prepares the claim.
    plain = _render("ts_renamed-dra-none-1.36-inference-plain")
    assert "config" not in plain[0]["spec"]["spec"]["devices"]
    gated = _render("ts_renamed-dra-none-1.36-inference-plain",
                    cluster_changes={"dra_feature_gates": ("TimeSlicingSettings",)})
    (config,) = gated[0]["spec"]["spec"]["devices"]["config"]
    assert config["requests"] == ["gpu"] and config["opaque"]["driver"] == "gpu.nvidia.com"
    assert config["opaque"]["parameters"]["kind"] == "GpuConfig"
    assert config["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"
    # Kueue's DRA integration does not support per-request config, gate or not: none on what it admits, which on a
    # Kueue cluster is every GPU workload, Deployments included (issue 23 item 7).
    for shape in ("training_gang", "inference"):
        kueue = _render(f"ts_renamed-dra-kueue-1.36-{shape}-plain",
                        cluster_changes={"dra_feature_gates": ("TimeSlicingSettings",)})
        assert "config" not in kueue[0]["spec"]["spec"]["devices"]


@pytest.mark.parametrize("strategy_variant", ["whole_gpu", "mig_mixed", "ts_renamed"])
def test_pods_on_kueue_dra_clusters_reference_templates_never_claims(strategy_variant):
    # Kueue v0.19 marks a workload whose pods name a ResourceClaim inadmissible.
    for shape in ("training_gang-plain", "inference-plain", "development-plain"):
        objects = _render(f"{strategy_variant}-dra-kueue-1.36-{shape}")
        assert "ResourceClaim" not in _kinds(objects)
        for claim in _pod(objects)["spec"]["resourceClaims"]:
            assert set(claim) == {"name", "resourceClaimTemplateName"}


def test_dra_driver_floor_is_cel_and_the_gfd_label_only_where_nodes_carry_it():
    case_id = "whole_gpu-dra-none-1.36-inference-shared_driver"
    expressions = [s["cel"]["expression"]
                   for s in _render(case_id)[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]]
    assert "'driverVersion' in device.attributes['gpu.nvidia.com'] && " \
           "device.attributes['gpu.nvidia.com'].driverVersion.major() >= 550" in expressions
    label = {"key": "nvidia.com/cuda.driver-version.major", "operator": "Gt", "values": ["549"]}

    def node_expressions(objects):
        terms = _pod(objects)["spec"].get("affinity", {}).get("nodeAffinity", {})
        terms = terms.get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [{}])
        return terms[0].get("matchExpressions", [])

    # Unknown (never synced) or seen missing: DRA-only nodes may run no GFD, and a required label matches no node.
    assert label not in node_expressions(_render(case_id))
    assert label not in node_expressions(_render(case_id, pool_changes={"driver_major_label": False}))
    assert label in node_expressions(_render(case_id, pool_changes={"driver_major_label": True}))
    # The device plugin ships GFD: there the label stays the constraint.
    assert label in node_expressions(_render("whole_gpu-device_plugin-none-1.36-inference-shared_driver"))


# --- gang marks -------------------------------------------------------------------------------------------------


def test_kai_marks_job_and_pods_so_the_pod_grouper_leaves_our_group_alone():
    objects = _render("whole_gpu-device_plugin-kai-1.36-training_gang-plain")
    job = objects[-1]
    pod = job["spec"]["template"]
    assert job["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"] == "true"
    assert pod["metadata"]["annotations"]["kai.scheduler/skip-podgrouper"] == "true"
    assert pod["metadata"]["annotations"]["pod-group-name"] == objects[0]["metadata"]["name"]
    assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "gpu-ml-research"
    assert pod["spec"]["schedulerName"] == "kai-scheduler"


def test_volcano_pods_join_the_group_by_annotation():
    objects = _render("whole_gpu-device_plugin-volcano-1.36-training_gang-plain")
    pod_group, pod = objects[0], _pod(objects)
    assert pod_group["spec"] == {
        "minMember": 4,
        "minResources": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
        "queue": "gpu-ml-research",
        "priorityClassName": "gpu-portal-training",
    }
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == pod_group["metadata"]["name"]
    assert pod["spec"]["schedulerName"] == "volcano"


def test_kueue_suspends_the_job_and_names_the_local_queue_without_plain_pod_group_labels():
    objects = _render("whole_gpu-device_plugin-kueue-1.36-training_gang-plain")
    job = objects[-1]
    assert job["spec"]["suspend"] is True
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-ml-research"
    pod_metadata = str(job["spec"]["template"]["metadata"])
    assert "pod-group" not in pod_metadata and "schedulerName" not in job["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    "version,kinds,pod_field",
    [
        ("1.35", [("scheduling.k8s.io/v1alpha1", "Workload")], "workloadRef"),
        (
            "1.36",
            [("scheduling.k8s.io/v1alpha2", "Workload"), ("scheduling.k8s.io/v1alpha2", "PodGroup")],
            "schedulingGroup",
        ),
        (
            "1.37",
            [("scheduling.k8s.io/v1beta1", "Workload"), ("scheduling.k8s.io/v1beta1", "PodGroup")],
            "schedulingGroup",
        ),
    ],
)
def test_native_gang_follows_the_cluster_minor_version(version, kinds, pod_field):
    objects = _render(f"whole_gpu-device_plugin-native-{version}-training_gang-plain")
    assert [(o["apiVersion"], o["kind"]) for o in objects if o["apiVersion"].startswith("scheduling.k8s.io")] == kinds
    pod = _pod(objects)["spec"]
    assert pod_field in pod and "schedulerName" not in pod
    if pod_field == "schedulingGroup":
        (group,) = [o for o in objects if o["kind"] == "PodGroup"]
        assert pod["schedulingGroup"] == {"podGroupName": group["metadata"]["name"]}


# --- isolation ----------------------------------------------------------------------------------------------------


def test_tenant_exclusive_on_a_clique_keeps_other_teams_out_and_requires_a_clique():
    pod = _pod(_render("whole_gpu-device_plugin-none-1.36-inference-exclusive_clique_driver"))["spec"]
    term = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term == {
        "topologyKey": "nvidia.com/gpu.clique",
        "namespaceSelector": {},
        "labelSelector": {
            "matchExpressions": [
                {"key": "gpu-portal.example.com/team", "operator": "Exists"},
                {"key": "gpu-portal.example.com/team", "operator": "NotIn", "values": ["ml-research"]},
            ]
        },
    }
    (node_term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert node_term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.clique", "operator": "Exists"},
        {"key": "nvidia.com/cuda.driver-version.major", "operator": "Gt", "values": ["549"]},
    ]


def test_tenant_exclusive_off_fabric_uses_the_node_as_domain():
    pod = _pod(_render("whole_gpu-device_plugin-none-1.36-inference-exclusive_host"))["spec"]
    term = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert "nodeAffinity" not in pod["affinity"]


def test_shared_fabric_without_floor_has_no_affinity():
    assert "affinity" not in _pod(_render("whole_gpu-device_plugin-none-1.36-inference-plain"))["spec"]


# --- team objects -------------------------------------------------------------------------------------------------


def test_team_quota_counts_extended_resources_and_dra_devices_per_class():
    case = _case("whole_gpu-device_plugin-kueue-1.36-inference-plain")
    quota = render_team(make_team(), case.cluster)[1]
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "16",
        "requests.nvidia.com/gpu.shared": "8",
        "requests.nvidia.com/mig-1g.18gb": "14",
    }
    team = replace(make_team(), gpu_quota={}, dra_devices={"gpu.nvidia.com": 10, "mig.nvidia.com": 14})
    dra_quota = render_team(team, replace(case.cluster, scheduling_model="dra"))[1]
    # kubernetes pkg/quota/v1/evaluator/core/resource_claims.go: <class> + ".deviceclass.resource.k8s.io/devices"
    assert dra_quota["spec"]["hard"] == {
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "10",
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "14",
    }


def test_team_without_gpu_quota_gets_no_resource_quota():
    case = _case("whole_gpu-device_plugin-none-1.36-inference-plain")
    assert _kinds(render_team(replace(make_team(), gpu_quota={}), case.cluster)) == [
        "Namespace", "NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


def test_namespace_carries_team_and_sanitised_cost_centre():
    case = _case("whole_gpu-device_plugin-none-1.36-inference-plain")
    labels = render_team(make_team(), case.cluster)[0]["metadata"]["labels"]
    assert labels["gpu-portal.example.com/team"] == "ml-research"
    assert labels["gpu-portal.example.com/cost-center"].startswith("CC-4711-Research-")


@pytest.mark.parametrize(
    "backend,kind,spec",
    [
        ("kueue", "LocalQueue", {"clusterQueue": "gpu-portal"}),
        ("volcano", "Queue", {"weight": 1, "reclaimable": True, "parent": "research"}),
    ],
)
def test_team_queue_per_backend(backend, kind, spec):
    case = _case(f"whole_gpu-device_plugin-{backend}-1.36-inference-plain")
    queue = render_team(make_team(), case.cluster)[-1]
    assert queue["kind"] == kind and queue["spec"] == spec


def test_kai_team_queue_is_a_leaf_under_the_platform_queue():
    case = _case("whole_gpu-device_plugin-kai-1.36-inference-plain")
    queue = render_team(make_team(), case.cluster)[-1]
    assert queue["apiVersion"] == "scheduling.run.ai/v2" and queue["spec"]["parentQueue"] == "research"
    assert queue["spec"]["resources"]["gpu"] == {"quota": 16, "limit": -1, "overQuotaWeight": 1}
    assert "namespace" not in queue["metadata"]  # cluster-scoped


# --- order, labels, purity of output ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case_id,kinds",
    [
        (
            "whole_gpu-dra-volcano-1.36-training_gang-plain",
            ["Namespace", "ResourceQuota", "NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Queue",
             "PriorityClass", "ResourceClaimTemplate", "PodGroup", "Service", "Job"],
        ),
        (
            "whole_gpu-dra-native-1.37-training_gang-plain",
            ["Namespace", "ResourceQuota", "NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
             "PriorityClass", "ResourceClaimTemplate", "Workload",
             "PodGroup", "Service", "Job"],
        ),
        (
            "mig_mixed-dra-kueue-1.35-inference-plain",
            [
                "Namespace",
                "ResourceQuota",
                "NetworkPolicy",
                "LocalQueue",
                "PriorityClass",
                "ResourceClaimTemplate",
                "Service",
                "PodDisruptionBudget",
                "Deployment",
            ],
        ),
        (
            "ts_plain-device_plugin-none-1.34-development-plain",
            ["Namespace", "ResourceQuota", "NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
             "PriorityClass", "Deployment"],
        ),
    ],
)
def test_render_all_returns_objects_in_apply_order(case_id, kinds):
    case = _case(case_id)
    assert _kinds(render_all(case.team, case.request, case.cluster)) == kinds


def test_selector_finds_every_request_object_and_pod():
    case = _case("whole_gpu-dra-kai-1.36-training_gang-exclusive_clique_driver")
    selector = selector_for_request(case.request.request_id, case.cluster.label_domain)
    objects = render(case.request, case.cluster)
    assert all(selector.items() <= o["metadata"]["labels"].items() for o in objects)
    assert selector.items() <= _pod(objects)["metadata"]["labels"].items()
    assert selector.items() <= objects[0]["spec"]["metadata"]["labels"].items()  # generated claims too


def test_rendering_is_deterministic_and_objects_share_no_mutable_state():
    case = _case("whole_gpu-device_plugin-kai-1.36-training_gang-exclusive_clique_driver")
    first, second = render(case.request, case.cluster), render(case.request, case.cluster)
    assert first == second
    first[0]["metadata"]["labels"]["mutated"] = "yes"
    assert all("mutated" not in o["metadata"]["labels"] for o in first[1:])
    assert "mutated" not in _pod(first)["metadata"]["labels"]


def test_training_pods_find_rank_zero_through_the_headless_service():
    objects = _render("whole_gpu-device_plugin-none-1.36-training_single-plain")
    service, job = objects
    pod = job["spec"]["template"]["spec"]
    assert service["spec"]["clusterIP"] == "None" and pod["subdomain"] == service["metadata"]["name"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == f"{job['metadata']['name']}-0.{service['metadata']['name']}.gpu-ml-research.svc"
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == job["spec"]["parallelism"] == 1
    assert pod["restartPolicy"] == "Never"


def test_request_name_starting_with_a_digit_still_gives_a_valid_service_name():
    objects = _render("whole_gpu-device_plugin-none-1.36-inference-plain", request_changes={"name": "7b-llama"})
    service = next(o for o in objects if o["kind"] == "Service")
    assert service["metadata"]["name"][0].isalpha()


@pytest.mark.parametrize(
    "case_id,changes,cpu,memory",
    [
        ("whole_gpu-device_plugin-none-1.36-inference-plain", {}, "16", "128Gi"),  # 2 GPUs x (8, 64Gi)
        ("mig_mixed-device_plugin-none-1.36-inference-plain", {}, "2", "16Gi"),  # 2 x 1g: (1, 8Gi) per slice
        ("mig_mixed-device_plugin-none-1.36-inference-plain", {"mig_profile": "3g.71gb"}, "6", "48Gi"),
        ("ts_renamed-device_plugin-none-1.36-inference-plain", {}, "2", "16Gi"),  # 1 share = a quarter GPU
    ],
)
def test_host_cpu_and_memory_scale_with_the_devices(case_id, changes, cpu, memory):
    container = _pod(_render(case_id, request_changes=changes))["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": cpu, "memory": memory}
    assert container["resources"]["limits"]["memory"] == memory


# --- DRAExtendedResource ------------------------------------------------------------------------------------------


def test_dra_extended_resource_path_asks_limits_and_makes_no_claim():
    objects = _render("whole_gpu-dra-none-1.36-inference-plain",
                      request_changes={"dra_extended_resource": "nvidia.com/gpu"},
                      cluster_changes={"dra_extended_resources": ("nvidia.com/gpu",)})
    assert not [o for o in objects if o["kind"].startswith("ResourceClaim")]
    pod = _pod(objects)["spec"]
    assert "resourceClaims" not in pod and "claims" not in pod["containers"][0]["resources"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5e.48xlarge"}


def test_dra_extended_resource_path_is_refused_where_kubernetes_or_the_device_class_cannot_serve_it():
    with pytest.raises(RenderError, match="DRAExtendedResource is alpha and off"):
        _render("whole_gpu-dra-none-1.35-inference-plain", request_changes={"dra_extended_resource": "nvidia.com/gpu"},
                cluster_changes={"dra_extended_resources": ("nvidia.com/gpu",)})
    with pytest.raises(RenderError, match="No DeviceClass on eu-west-gpu-1 declares extendedResourceName"):
        _render("whole_gpu-dra-none-1.36-inference-plain", request_changes={"dra_extended_resource": "nvidia.com/gpu"})

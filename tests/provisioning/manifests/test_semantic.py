"""The semantic checker (tests/support/semantic.py) against clusters, and against broken object sets.

Given one training request, when it is rendered for a device-plugin cluster, a DRA cluster, a Kueue cluster and a
GB200 (multi-node NVLink) cluster, then each object set is schema-valid and schedulable on its cluster (as kubesim
builds its nodes, DeviceClasses and ResourceSlices), and the sets differ exactly where the clusters do.

Given an object set that is right for its cluster, when one thing in it (or in the cluster) is broken, then the one
rule that guards it reports it in plain words: no rule can pass silently.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from provisioning.manifests import render_all, validate_objects
from tests.support.semantic import RULES, Admitted, Inventory, assert_schedulable, check

from .inventory import admitted_for, build_inventory, inventory_for
from .matrix import cases

CASES = {case.id: case for case in cases()}
CLIQUE = "nvidia.com/gpu.clique"
GB200_CLIQUE = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.1"


def _kind(objects, kind, api=""):
    return [o for o in objects if o["kind"] == kind and o["apiVersion"].startswith(api)]


def _pod(objects):
    return objects[-1]["spec"]["template"]["spec"]


def _gb200(case):
    """The same training request placed on a GB200 NVL72 pool (4 GPUs a tray, one NVLink domain across trays)."""
    request = replace(case.request, gpu_model="GB200-186GB", gpu_product="NVIDIA-GB200", dra_product_name="NVIDIA GB200")
    pool = replace(case.cluster.pool, name="gb200-nvl72", gpu_product="NVIDIA-GB200", nvlink_domain=GB200_CLIQUE,
                   multinode_nvlink=True, node_selector={"node.kubernetes.io/instance-type": "gb200-nvl72"})
    cluster = replace(case.cluster, name="gb200-west", pool=pool)
    inventory = build_inventory(cluster, model="B200-180GB")
    for node in inventory.nodes:  # kubesim has no GB200 node shape: B200 trays relabelled as GFD labels GB200s
        node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-GB200"
    return request, cluster, inventory


def test_the_same_request_schedules_on_a_device_plugin_a_dra_a_kueue_and_a_gb200_cluster():
    plugin = CASES["whole_gpu-device_plugin-volcano-1.36-training_gang-plain"]
    dra = CASES["whole_gpu-dra-kai-1.36-training_gang-plain"]
    kueue = CASES["whole_gpu-dra-kueue-1.36-training_gang-plain"]
    gb200_request, gb200_cluster, gb200_inventory = _gb200(plugin)
    targets = {
        "device_plugin": (plugin.team, plugin.request, plugin.cluster, inventory_for(plugin.cluster)),
        "dra": (dra.team, dra.request, dra.cluster, inventory_for(dra.cluster)),
        "kueue": (kueue.team, kueue.request, kueue.cluster, inventory_for(kueue.cluster)),
        "gb200": (plugin.team, gb200_request, gb200_cluster, gb200_inventory),
    }
    # The same answers: 4 ranks x 2 GPUs that start together; only the decision's cluster-side fields differ.
    assert {(r.replicas, r.gpus_per_replica, r.gang.min_members, r.strategy) for _, r, _, _ in targets.values()} == {
        (4, 2, 4, "whole_gpu")}
    rendered = {}
    for name, (team, request, cluster, inventory) in targets.items():
        objects = render_all(team, request, cluster)
        assert validate_objects(objects, cluster.kubernetes_version) == len(objects)
        assert_schedulable(objects, inventory, admitted_for(team, request))
        rendered[name] = objects

    # Device plugin: the GPUs are an extended resource; Volcano owns the GPU nodes and gangs the pods.
    objects = rendered["device_plugin"]
    pod = _pod(objects)
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert "resourceClaims" not in pod and not _kind(objects, "ResourceClaimTemplate")
    assert pod["schedulerName"] == "volcano"
    (group,) = _kind(objects, "PodGroup", "scheduling.volcano.sh/")
    assert group["spec"]["minMember"] == 4 and group["spec"]["minResources"]["nvidia.com/gpu"] == "8"

    # DRA: a claim per pod from a template of the driver's gpu.nvidia.com class, selected by CEL; KAI gangs them.
    objects = rendered["dra"]
    pod = _pod(objects)
    assert not any(k.startswith("nvidia.com/") for k in pod["containers"][0]["resources"]["limits"])
    (template,) = _kind(objects, "ResourceClaimTemplate")
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 2)
    assert request["selectors"] == [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'"}}]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert pod["schedulerName"] == "kai-scheduler"
    (quota,) = _kind(objects, "ResourceQuota")
    assert quota["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "18"

    # Kueue on DRA: the default scheduler, one suspended Job admitted whole through the team's LocalQueue, a claim
    # template (Kueue refuses claims by name) without driver config (Kueue does not support it).
    objects = rendered["kueue"]
    pod, job = _pod(objects), objects[-1]
    assert "schedulerName" not in pod and not _kind(objects, "PodGroup")
    assert job["spec"]["suspend"] is True and job["spec"]["parallelism"] == 4
    (local_queue,) = _kind(objects, "LocalQueue")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == local_queue["metadata"]["name"]
    (template,) = _kind(objects, "ResourceClaimTemplate")
    assert "config" not in template["spec"]["spec"]["devices"]
    assert all("resourceClaimName" not in claim for claim in pod["resourceClaims"])

    # GB200: the device plugin's GPUs plus a ComputeDomain whose IMEX channel every pod claims, all in one clique.
    objects = rendered["gb200"]
    pod = _pod(objects)
    (domain,) = _kind(objects, "ComputeDomain", "resource.nvidia.com/")
    channel = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    assert {"name": "imex", "resourceClaimTemplateName": channel} in pod["resourceClaims"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == CLIQUE
    assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-GB200"
    assert not _kind(objects, "ResourceClaimTemplate")  # the channel template is the driver's to create
    # Each set is wrong for every other cluster: e.g. the GB200 set names a product no H200 node has.
    assert "node-selection" in check(rendered["gb200"], inventory_for(plugin.cluster),
                                     admitted_for(plugin.team, gb200_request)).rules()
    # The device-plugin set on the DRA cluster: its nvidia.com/gpu would be served from DRA (the gpu.nvidia.com
    # class declares it, 1.36), but Volcano is not the scheduler there, its quota keys count the wrong thing, and
    # Volcano itself would never fit a pod (or the PodGroup's minResources) asking DRA-served nvidia.com/gpu.
    assert check(rendered["device_plugin"], inventory_for(dra.cluster),
                 admitted_for(dra.team, dra.request)).rules() == {"scheduler", "quota", "extended-resources", "gang"}


# --- every rule catches what it guards ---------------------------------------------------------------------------


def _setup(case_id):
    case = CASES[case_id]
    objects = render_all(case.team, case.request, case.cluster)
    inventory, admitted = inventory_for(case.cluster), admitted_for(case.team, case.request)
    assert not check(objects, inventory, admitted).problems  # right as rendered: the breakage alone must be caught
    return copy.deepcopy(objects), inventory, admitted


def _workload(objects):
    return objects[-1]


def _with_nodes(inventory: Inventory, change) -> Inventory:
    nodes = copy.deepcopy(inventory.nodes)
    for node in nodes:
        change(node)
    return replace(inventory, nodes=nodes)


def _break_scheduler(objects, inventory, admitted):
    _pod(objects)["schedulerName"] = "default-scheduler"  # a Volcano cluster's GPU pod left to the default scheduler
    return objects, inventory, admitted


def _break_selector(objects, inventory, admitted):
    _pod(objects)["nodeSelector"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
    return objects, inventory, admitted


def _break_driver_floor_gt(objects, inventory, admitted):
    # Gt is strict: nodes run driver 570, so "greater than 570" matches none of them.
    expressions = _pod(objects)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"]
    next(e for e in expressions if e["key"] == "nvidia.com/cuda.driver-version.major")["values"] = ["570"]
    return objects, inventory, admitted


def _break_missing_label(objects, inventory, admitted):
    # DRA-only nodes without GFD: a required clique label matches none of them.
    return objects, _with_nodes(inventory, lambda n: n["metadata"]["labels"].pop(CLIQUE)), admitted


def _break_tolerations(objects, inventory, admitted):
    _pod(objects)["tolerations"] = []
    return objects, inventory, admitted


def _break_unschedulable(objects, inventory, admitted):
    return objects, _with_nodes(inventory, lambda n: n["spec"].update(unschedulable=True)), admitted


def _break_resource_name(objects, inventory, admitted):
    limits = _pod(objects)["containers"][0]["resources"]["limits"]
    limits["nvidia.com/mig-1g.10gb"] = limits.pop("nvidia.com/mig-1g.18gb")  # an A100 profile on H200 nodes
    _kind(objects, "ResourceQuota")[0]["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] = "14"  # capped, still wrong
    return objects, inventory, replace(admitted, quota=admitted.quota | {"requests.nvidia.com/mig-1g.10gb": 14})


def _break_resource_count(objects, inventory, admitted):
    _pod(objects)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "9"  # nodes have 8 GPUs
    return objects, inventory, admitted


def _break_extended_resource_gate(objects, inventory, admitted):
    # The DRA claim swapped for nvidia.com/gpu limits the gpu.nvidia.com class declares: not served on 1.35.
    pod = _pod(objects)
    pod.pop("resourceClaims")
    pod["containers"][0]["resources"].pop("claims")
    pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"
    objects = [o for o in objects if o["kind"] != "ResourceClaimTemplate"]
    return objects, inventory, admitted


def _break_claim_by_name(objects, inventory, admitted):
    template = _kind(objects, "ResourceClaimTemplate")[0]
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": dict(template["metadata"]),
             "spec": template["spec"]["spec"]}
    objects[objects.index(template)] = claim
    _pod(objects)["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    return objects, inventory, admitted


def _break_claim_template_missing(objects, inventory, admitted):
    objects = [o for o in objects if o["kind"] != "ResourceClaimTemplate"]
    return objects, inventory, admitted


def _break_device_class(objects, inventory, admitted):
    return objects, replace(inventory, device_classes=tuple(c for c in inventory.device_classes
                                                             if c["metadata"]["name"] != "mig.nvidia.com")), admitted


def _break_product_name(objects, inventory, admitted):
    selector = _kind(objects, "ResourceClaimTemplate")[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"][
        "selectors"][0]
    selector["cel"]["expression"] = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA-H200'"  # GFD form
    return objects, inventory, admitted


def _break_unguarded_attribute(objects, inventory, admitted):
    selectors = _kind(objects, "ResourceClaimTemplate")[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"][
        "selectors"]
    selectors.append({"cel": {"expression": "device.attributes['gpu.nvidia.com'].addressingMode == 'HMM'"}})
    return objects, inventory, admitted


def _break_quota_value(objects, inventory, admitted):
    _kind(objects, "ResourceQuota")[0]["spec"]["hard"]["requests.nvidia.com/gpu"] = "32"
    return objects, inventory, admitted


def _break_quota_uncapped(objects, inventory, admitted):
    del _kind(objects, "ResourceQuota")[0]["spec"]["hard"]["requests.nvidia.com/mig-1g.18gb"]
    quota = {k: v for k, v in admitted.quota.items() if k != "requests.nvidia.com/mig-1g.18gb"}
    return objects, inventory, replace(admitted, quota=quota)


def _break_quota_too_small(objects, inventory, admitted):
    # A time-sliced DRA replica holds whole devices: 4 replicas x 1 device against a quota of 2.
    _kind(objects, "ResourceQuota")[0]["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] = "2"
    quota = admitted.quota | {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 2}
    return objects, inventory, replace(admitted, quota=quota)


def _break_kai_queue(objects, inventory, admitted):
    _kind(objects, "Queue", "scheduling.run.ai/")[0]["spec"]["resources"]["gpu"]["quota"] = -1
    return objects, inventory, admitted


def _break_volcano_capability(objects, inventory, admitted):
    _kind(objects, "Queue", "scheduling.volcano.sh/")[0]["spec"]["capability"] = {"nvidia.com/gpu": "64"}
    return objects, inventory, admitted


def _break_cluster_queue(objects, inventory, admitted):
    objects.insert(3, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "gpu-portal"},
                       "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                           {"name": "h200", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]}]}]}})
    return objects, inventory, admitted


def _break_local_queue(objects, inventory, admitted):
    return objects, replace(inventory, cluster_queues=frozenset({"research"})), admitted


def _break_parent_queue(objects, inventory, admitted):
    return objects, replace(inventory, queues=frozenset()), admitted


def _break_min_member(objects, inventory, admitted):
    _kind(objects, "PodGroup")[0]["spec"]["minMember"] = 1  # what KAI's pod-grouper would give a Job
    return objects, inventory, admitted


def _break_native_min_count(objects, inventory, admitted):
    _kind(objects, "PodGroup", "scheduling.k8s.io/")[0]["spec"]["schedulingPolicy"]["gang"]["minCount"] = 5
    return objects, inventory, admitted


def _break_gang_missing(objects, inventory, admitted):
    objects = [o for o in objects if o["kind"] != "PodGroup"]
    return objects, inventory, admitted


def _break_feature_gates(objects, inventory, admitted):
    # GenericWorkload alone on 1.36: the Workload is accepted, the pods start one by one (no GangScheduling plugin).
    return objects, replace(inventory, feature_gates=frozenset({"GenericWorkload"})), admitted


def _break_priority_class_missing(objects, inventory, admitted):
    # The PriorityClass is neither rendered nor on the cluster: the API server's Priority plugin rejects the pods.
    return [o for o in objects if o["kind"] != "PriorityClass"], inventory, admitted


def _break_priority_grace(objects, inventory, admitted):
    # Ten minutes promised to checkpoint, Kubernetes' 30 seconds given.
    del _pod(objects)["terminationGracePeriodSeconds"]
    return objects, inventory, admitted


def _break_workload_priority_class(objects, inventory, admitted):
    return [o for o in objects if o["kind"] != "WorkloadPriorityClass"], inventory, admitted


def _break_workload_priority_value(objects, inventory, admitted):
    _kind(objects, "WorkloadPriorityClass")[0]["value"] = 5
    return objects, inventory, admitted


def _break_pod_group_priority(objects, inventory, admitted):
    _kind(objects, "PodGroup", "scheduling.run.ai")[0]["spec"]["priorityClassName"] = "train-urgent"
    return objects, inventory, admitted


def _break_mps_shm(objects, inventory, admitted):
    pod = _pod(objects)
    pod["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]
    pod["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return objects, inventory, admitted


def _break_kueue_mapping(objects, inventory, admitted):
    return objects, replace(inventory, kueue_device_class_mappings=frozenset({"mig.nvidia.com"})), admitted


def _break_kueue_topology(objects, inventory, admitted):
    objects[-1]["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] = CLIQUE
    return objects, inventory, admitted


def _break_mps_cap(objects, inventory, admitted):
    (template,) = _kind(objects, "ResourceClaimTemplate")
    sharing = template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]
    sharing["mpsConfig"] = {"defaultActiveThreadPercentage": 25, "defaultPinnedDeviceMemoryLimit": "35942Mi"}
    return objects, inventory, admitted


def _break_volcano_extended_resource(objects, inventory, admitted):
    # 1.36 serves nvidia.com/gpu from the gpu.nvidia.com class (KEP-5004), but not to Volcano, which reads allocatable.
    return _break_extended_resource_gate(objects, inventory, admitted)


def _break_volcano_min_resources(objects, inventory, admitted):
    _kind(objects, "PodGroup")[0]["spec"]["minResources"]["nvidia.com/gpu"] = "8"
    return objects, inventory, admitted


def _break_quota_double_count(objects, inventory, admitted):
    # A cluster with device-plugin pools too: the namespace also caps nvidia.com/gpu, and on 1.36 the claims of the
    # gpu.nvidia.com class (extendedResourceName nvidia.com/gpu) count against it as well as against their class.
    _kind(objects, "ResourceQuota")[0]["spec"]["hard"]["requests.nvidia.com/gpu"] = "2"
    return objects, inventory, replace(admitted, quota=admitted.quota | {"requests.nvidia.com/gpu": 2})


def _break_kai_dra_mig_quota(objects, inventory, admitted):
    _kind(objects, "Queue", "scheduling.run.ai/")[0]["spec"]["resources"]["gpu"]["quota"] = 32  # 18 + 14 MIG devices
    return objects, inventory, admitted


def _break_kueue_bypass(objects, inventory, admitted):
    # An inference Deployment on a Kueue cluster without the team's LocalQueue: its GPUs bypass Kueue's quota.
    deployment = objects[-1]
    del deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    del deployment["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    return objects, inventory, admitted


def _break_kueue_unsuspended(objects, inventory, admitted):
    objects[-1]["spec"].pop("suspend")
    return objects, inventory, admitted


def _break_policy_warns(objects, inventory, admitted):
    _kind(objects, "ValidatingAdmissionPolicyBinding")[0]["spec"]["validationActions"] = ["Warn"]
    return objects, inventory, admitted


def _break_policy_cel(objects, inventory, admitted):
    _kind(objects, "ValidatingAdmissionPolicy")[0]["spec"]["validations"][0]["expression"] = "variables.rid in (variables.owners"
    return objects, inventory, admitted


def _break_policy_size(objects, inventory, admitted):
    # The request's pods now ask 4 GPUs while the policy still admits the 2 that were approved.
    limits = objects[-1]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    limits["nvidia.com/gpu"] = 1
    policy = _kind(objects, "ValidatingAdmissionPolicy")[0]
    for variable in policy["spec"]["variables"]:
        if variable["name"] == "limits":
            variable["expression"] = variable["expression"].replace(": 2}", ": 0}")
    return objects, inventory, admitted


def _break_policy_missing(objects, inventory, admitted):
    objects = [o for o in objects if not o["kind"].startswith("ValidatingAdmissionPolicy")]
    return objects, inventory, admitted


# (case, breakage, rule, words the message must contain)
BREAKAGES = [
    ("whole_gpu-device_plugin-volcano-1.36-inference-plain", _break_scheduler, "scheduler", "scheduled by volcano"),
    ("whole_gpu-device_plugin-kai-1.36-training_gang-plain", _break_scheduler, "scheduler", "kai-scheduler"),
    ("whole_gpu-device_plugin-native-1.36-inference-plain", _break_selector, "node-selection",
     "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"),
    ("whole_gpu-device_plugin-kueue-1.36-training_single-shared_driver", _break_driver_floor_gt, "node-selection",
     "nvidia.com/cuda.driver-version.major Gt ['570']"),
    ("whole_gpu-dra-native-1.36-development-exclusive_clique_driver", _break_missing_label, "node-selection",
     "nvidia.com/gpu.clique Exists"),
    ("mig_mixed-device_plugin-native-1.36-inference-plain", _break_tolerations, "tolerations",
     "nvidia.com/gpu=present:NoSchedule"),
    ("ts_renamed-device_plugin-native-1.36-inference-plain", _break_unschedulable, "tolerations",
     "node.kubernetes.io/unschedulable"),
    ("mig_mixed-device_plugin-native-1.36-development-plain", _break_resource_name, "extended-resources",
     "nvidia.com/mig-1g.10gb is advertised by no node"),
    ("whole_gpu-device_plugin-native-1.36-development-plain", _break_resource_count, "extended-resources",
     "no node it can land on has that many"),
    ("whole_gpu-dra-native-1.35-development-plain", _break_extended_resource_gate, "extended-resources",
     "DRAExtendedResource is alpha and off on Kubernetes 1.35"),
    ("whole_gpu-dra-kueue-1.36-training_gang-plain", _break_claim_by_name, "claims", "Kueue admits only pods"),
    ("whole_gpu-dra-native-1.36-inference-plain", _break_claim_template_missing, "claims",
     "neither the set nor a ComputeDomain"),
    ("mig_mixed-dra-native-1.36-inference-plain", _break_device_class, "device-classes", "mig.nvidia.com"),
    ("whole_gpu-dra-native-1.36-inference-plain", _break_product_name, "devices", "matching its selectors"),
    ("whole_gpu-dra-native-1.36-inference-plain", _break_unguarded_attribute, "devices",
     "has no attribute 'addressingMode'"),
    ("whole_gpu-device_plugin-native-1.36-inference-plain", _break_quota_value, "quota",
     "differ from what approval admits"),
    ("mig_mixed-device_plugin-native-1.36-inference-plain", _break_quota_uncapped, "quota", "does not cap"),
    ("ts_plain-dra-volcano-1.36-training_gang-plain", _break_quota_too_small, "quota", "holds 4 of gpu.nvidia.com"),
    ("whole_gpu-device_plugin-kai-1.36-training_gang-plain", _break_kai_queue, "queues", "GPU quota is -1"),
    ("whole_gpu-device_plugin-volcano-1.36-training_gang-plain", _break_volcano_capability, "queues",
     "capability {nvidia.com/gpu: 64}"),
    ("whole_gpu-device_plugin-kueue-1.36-training_gang-plain", _break_cluster_queue, "queues",
     "nominalQuota {nvidia.com/gpu: 64}"),
    ("whole_gpu-device_plugin-kueue-1.36-training_gang-plain", _break_local_queue, "queues",
     "ClusterQueue 'gpu-portal'"),
    ("whole_gpu-device_plugin-kai-1.36-inference-plain", _break_parent_queue, "queues", "parent queue 'research'"),
    ("whole_gpu-device_plugin-kai-1.36-training_gang-plain", _break_min_member, "gang", "gang minimum is 1"),
    ("whole_gpu-device_plugin-native-1.37-training_gang-plain", _break_native_min_count, "gang",
     "exceeds the 4 pods"),
    ("whole_gpu-dra-volcano-1.36-training_gang-plain", _break_gang_missing, "gang", "which the set lacks"),
    ("whole_gpu-device_plugin-native-1.36-training_gang-plain", _break_feature_gates, "feature-gates",
     "needs GangScheduling on"),
    ("mps-device_plugin-none-1.36-inference-plain", _break_mps_shm, "shm", "hiding the MPS daemon's shared memory"),
    ("mps-dra-none-1.36-inference-plain", _break_mps_shm, "shm", "holds MPS shares (claim"),
    ("whole_gpu-dra-kueue-1.36-training_gang-plain", _break_kueue_mapping, "kueue-dra",
     "DeviceClass gpu.nvidia.com is not mapped in DRA configuration"),
    ("whole_gpu-dra-kueue-1.36-training_gang-plain", _break_kueue_topology, "kueue-dra",
     "does not count"),
    ("mps-dra-none-1.36-inference-plain", _break_mps_cap, "sharing", "caps the pod at 25% of the threads"),
    ("whole_gpu-dra-volcano-1.36-inference-plain", _break_volcano_extended_resource, "extended-resources",
     "fits nvidia.com/gpu against node allocatable only"),
    ("whole_gpu-dra-volcano-1.36-training_gang-plain", _break_volcano_min_resources, "gang",
     "minResources ask nvidia.com/gpu"),
    ("whole_gpu-dra-native-1.36-inference-plain", _break_quota_double_count, "quota",
     "which KEP-5004 charges to requests.nvidia.com/gpu"),
    ("whole_gpu-dra-kai-1.36-training_gang-plain", _break_kai_dra_mig_quota, "queues", "KAI counts 18 GPUs"),
    ("whole_gpu-device_plugin-kueue-1.36-inference-plain", _break_kueue_bypass, "kueue-queue",
     "would bypass Kueue's quota"),
    ("whole_gpu-dra-kueue-1.36-training_single-plain", _break_kueue_unsuspended, "kueue-queue",
     "not created suspended"),
    ("whole_gpu-device_plugin-volcano-1.36-inference-plain", _break_policy_warns, "admission-policy", "not [Deny]"),
    ("whole_gpu-dra-native-1.37-training_single-plain", _break_policy_cel, "admission-policy", "unclosed '('"),
    ("whole_gpu-device_plugin-native-1.36-inference-plain", _break_policy_size, "admission-policy",
     "the policy admits 0"),
    ("whole_gpu-dra-none-1.35-development-plain", _break_policy_missing, "admission-policy",
     "no ValidatingAdmissionPolicy bound with Deny"),
    ("whole_gpu-device_plugin-none-1.34-development-plain", _break_priority_class_missing, "priority",
     "no such PriorityClass on the cluster or in the set; the API server rejects the pods"),
    ("whole_gpu-device_plugin-volcano-1.36-training_gang-plain", _break_priority_grace, "priority",
     "terminationGracePeriodSeconds 30 is less than the 600 seconds class gpu-portal-training promises"),
    ("whole_gpu-dra-kueue-1.36-training_gang-plain", _break_workload_priority_class, "priority",
     "no such WorkloadPriorityClass; Kueue creates no Workload for it"),
    ("whole_gpu-dra-kueue-1.37-training_gang-plain", _break_workload_priority_value, "priority",
     "disagree: Kueue and the scheduler would order the work differently"),
    ("whole_gpu-device_plugin-kai-1.37-training_gang-plain", _break_pod_group_priority, "priority",
     "priorityClassName 'train-urgent': no such PriorityClass"),
]


@pytest.mark.parametrize(("case_id", "breakage", "rule", "words"), BREAKAGES,
                         ids=[f"{b[2]}-{b[1].__name__.removeprefix('_break_')}" for b in BREAKAGES])
def test_a_broken_object_set_is_caught_by_its_rule(case_id, breakage, rule, words):
    objects, inventory, admitted = breakage(*_setup(case_id))
    if rule != "admission-policy":  # a pod changed by hand no longer fits its approval either: that rule's own case
        inventory = replace(inventory, admission_policies=False)

    report = check(objects, inventory, admitted)

    assert report.rules() == {rule}, [str(p) for p in report.problems]
    assert any(words in p.message for p in report.problems), [str(p) for p in report.problems]


def test_every_rule_has_a_breakage_it_catches():
    assert {rule for _, _, rule, _ in BREAKAGES} == set(RULES)


def test_a_compute_domain_needs_the_drivers_crd_and_channel_class():
    request, cluster, inventory = _gb200(CASES["whole_gpu-device_plugin-volcano-1.36-training_gang-plain"])
    objects = render_all(CASES["whole_gpu-device_plugin-volcano-1.36-training_gang-plain"].team, request, cluster)
    admitted = Admitted(quota=admitted_for(CASES["whole_gpu-device_plugin-volcano-1.36-training_gang-plain"].team,
                                           request).quota, team_gpus=16, gang_size=4)
    assert not check(objects, inventory, admitted).problems

    report = check(objects, replace(inventory, crds=frozenset(), device_classes=()), admitted)

    assert report.rules() == {"claims", "device-classes"}
    assert {p.object.split("/")[0] for p in report.problems} == {"ComputeDomain"}


def test_a_gb200_gang_on_kueue_is_admissible_with_the_mappings_the_portal_asks_for():
    # Each pod claims its ComputeDomain's IMEX channel (class compute-domain-default-channel.nvidia.com) even with
    # device-plugin GPUs; Kueue (DRA integration on by default since 0.18) must map that class too, else
    # pkg/dra/claims.go marks the Workload inadmissible. The inventory's mappings are what the register tells the
    # platform to configure (manifests/clusterside.py), not read from the rendered objects.
    case = CASES["whole_gpu-device_plugin-kueue-1.36-training_gang-plain"]
    request, cluster, inventory = _gb200(case)
    objects = render_all(case.team, request, cluster)

    assert "compute-domain-default-channel.nvidia.com" in inventory.kueue_device_class_mappings
    assert_schedulable(objects, inventory, admitted_for(case.team, request))
    unmapped = replace(inventory, kueue_device_class_mappings=frozenset())
    assert check(objects, unmapped, admitted_for(case.team, request)).rules() == {"kueue-dra"}


def test_a_priority_class_already_on_the_cluster_serves_as_well_as_a_rendered_one():
    objects, inventory, admitted = _setup("whole_gpu-device_plugin-none-1.34-development-plain")
    [rendered] = _kind(objects, "PriorityClass")
    without = [o for o in objects if o["kind"] != "PriorityClass"]

    assert not check(without, replace(inventory, priority_classes=(rendered,)), admitted).problems

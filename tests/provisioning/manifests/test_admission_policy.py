"""Issue 23, item 8: on a cluster without Kueue that serves admissionregistration.k8s.io/v1, each team namespace gets
a ValidatingAdmissionPolicy and its binding that refuse GPU pods the portal did not approve.

The policy's CEL is evaluated here with cel-python (a CEL implementation, not the API server's cel-go: the
Kubernetes `quantity` library is stood in for by integer quantities, which is what NVIDIA extended resources are),
against the pods the portal's workloads make and against pods that copy an approved request's labels.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from provisioning.manifests import render_all, validate_objects
from provisioning.manifests.admission_policy import approved_pods
from provisioning.manifests.spec import ApprovedPods
from tests.support.semantic import assert_schedulable, check

from .inventory import admitted_for, inventory_for
from .matrix import cases

celpy = pytest.importorskip("celpy")
celtypes = pytest.importorskip("celpy.celtypes")

CASES = {case.id: case for case in cases()}
REQUEST_ID = "gpu-portal.example.com/request-id"


def _functions():
    # Kubernetes' quantity library, for the whole numbers extended resources are (kubernetes validation refuses
    # fractional ones); compareTo as Quantity.compareTo.
    return {"quantity": lambda s: celtypes.IntType(int(str(s))),
            "compareTo": lambda a, b: celtypes.IntType((a > b) - (a < b))}


def evaluate(policy: dict, pod: dict) -> list[str]:
    """The messages of the validations the pod fails; [] when admitted or not matched (a pod holding no GPU)."""
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(pod)}

    def run(expression, variables):
        program = env.program(env.compile(expression), functions=_functions())
        return program.evaluate({**activation, "variables": celtypes.MapType(variables)})

    if not all(bool(run(c["expression"], {})) for c in policy["spec"]["matchConditions"]):
        return []
    variables = {}
    for variable in policy["spec"]["variables"]:
        variables[celtypes.StringType(variable["name"])] = run(variable["expression"], variables)
    failed = []
    for validation in policy["spec"]["validations"]:
        try:
            ok = run(validation["expression"], variables)
        except celpy.CELEvalError:  # a runtime error fails the request (failurePolicy: Fail)
            ok = False
        if isinstance(ok, celpy.CELEvalError) or not isinstance(ok, celtypes.BoolType) or not bool(ok):
            failed.append(validation["message"])
    return failed


def _render(case_id: str, **team_changes):
    case = CASES[case_id]
    team = replace(case.team, **team_changes)
    objects = render_all(team, case.request, case.cluster)
    policy = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicy")
    return case, objects, policy


def _pod_of(workload: dict, owner: tuple[str, str] | None) -> dict:
    """A pod as the workload's controller creates it (generateName, no name), owned by `owner` (kind, name)."""
    template = workload["spec"]["template"] if workload["kind"] != "JobSet" else \
        workload["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": copy.deepcopy(template["metadata"]),
           "spec": copy.deepcopy(template["spec"])}
    pod["metadata"]["generateName"] = workload["metadata"]["name"] + "-"
    if owner:
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": owner[0], "name": owner[1], "uid": "u-1",
                                               "controller": True, "blockOwnerDeletion": True}]
    return pod


def _gpus(pod: dict, resource: str, amount: int) -> dict:
    pod["spec"]["containers"][0]["resources"]["limits"][resource] = amount
    return pod


def test_the_policy_admits_the_portals_own_pods_and_refuses_copies():
    case, objects, policy = _render("whole_gpu-device_plugin-volcano-1.36-training_single-plain")
    job = objects[-1]
    name = job["metadata"]["name"]

    assert evaluate(policy, _pod_of(job, ("Job", name))) == []
    # kubectl copies of the approved request's labels:
    assert evaluate(policy, _pod_of(job, None)) == [
        f"GPU pods in namespace gpu-ml-research must belong to the workload the GPU portal applied for their request."]
    assert evaluate(policy, _pod_of(job, ("Job", "my-own-job")))  # another Job with the same labels
    assert evaluate(policy, _gpus(_pod_of(job, ("Job", name)), "nvidia.com/gpu", 8)) == [
        "GPU pods in namespace gpu-ml-research may hold no more GPUs per pod than their request was approved for."]
    assert evaluate(policy, _gpus(_pod_of(job, ("Job", name)), "nvidia.com/gpu.shared", 1))  # another resource


def test_requests_not_approved_here_are_refused_and_other_approved_ones_admitted():
    other = ApprovedPods(request_id=7, owner_kind="ReplicaSet", owner_name="chat-r7", limits=(("nvidia.com/gpu", 1),))
    case, objects, policy = _render("whole_gpu-device_plugin-none-1.35-inference-plain", approved=(other,))
    deployment = objects[-1]
    own = _pod_of(deployment, ("ReplicaSet", f"{deployment['metadata']['name']}-7d9f8b6c4d"))
    assert evaluate(policy, own) == []

    # Another approved request of the team keeps running: its pods (ReplicaSet "<deployment>-<hash>") are admitted.
    seven = _pod_of(deployment, ("ReplicaSet", "chat-r7-5b4c8d9f7"))
    seven["metadata"]["labels"][REQUEST_ID] = "7"
    assert evaluate(policy, _gpus(seven, "nvidia.com/gpu", 1)) == []
    # A pending, completed or other team's request is not in this namespace's approvals.
    for rid in ("999", ""):
        pod = copy.deepcopy(own)
        pod["metadata"]["labels"][REQUEST_ID] = rid
        assert evaluate(policy, pod)[0].startswith("GPU pods in namespace gpu-ml-research run only for requests")
    # A ReplicaSet merely named like the request's is no Deployment's of that name.
    assert evaluate(policy, _pod_of(deployment, ("ReplicaSet", "inference-whole-gpu")))


def test_dra_pods_take_devices_only_from_their_requests_claim_templates():
    case, objects, policy = _render("whole_gpu-dra-kai-1.37-development-plain")
    deployment = objects[-1]
    owner = ("ReplicaSet", f"{deployment['metadata']['name']}-6f7d9c")
    assert evaluate(policy, _pod_of(deployment, owner)) == []
    by_hand = _pod_of(deployment, owner)
    by_hand["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "eight-gpus"}]
    assert evaluate(policy, by_hand) == [
        "GPU pods in namespace gpu-ml-research take DRA devices only from their request's ResourceClaimTemplates."]


def test_a_pod_without_gpus_is_not_the_policys_business():
    case, objects, policy = _render("whole_gpu-device_plugin-volcano-1.36-inference-plain")
    pod = _pod_of(objects[-1], None)
    pod["spec"]["containers"][0]["resources"]["limits"] = {"memory": "1Gi"}
    assert evaluate(policy, pod) == []


def test_policy_and_binding_are_schema_valid_and_pass_the_checker():
    case, objects, policy = _render("mig_mixed-device_plugin-native-1.37-training_gang-plain")
    binding = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"], "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gpu-ml-research"}}}}
    assert validate_objects(objects, "1.37") == len(objects)
    assert_schedulable(objects, inventory_for(case.cluster), admitted_for(case.team, case.request))
    # The approvals are read from the rendered workload itself: a MIG gang's Job, 2 slices per pod.
    assert approved_pods(case.request.request_id, objects[-1:]) == ApprovedPods(
        case.request.request_id, "Job", objects[-1]["metadata"]["name"], (("nvidia.com/mig-1g.18gb", 2),))


def test_rendered_only_without_kueue_and_where_the_cluster_serves_it():
    kueue = CASES["whole_gpu-device_plugin-kueue-1.36-inference-plain"]
    volcano = CASES["whole_gpu-device_plugin-volcano-1.36-inference-plain"]
    unserved = replace(volcano.cluster, admission_policies=False)
    for case, cluster in ((kueue, kueue.cluster), (volcano, unserved)):
        kinds = {o["kind"] for o in render_all(case.team, case.request, cluster)}
        assert not kinds & {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    # Without the policy on such a cluster the checker says the namespace is unguarded.
    objects = render_all(volcano.team, volcano.request, unserved)
    report = check(objects, inventory_for(volcano.cluster), admitted_for(volcano.team, volcano.request))
    assert report.rules() == {"admission-policy"}

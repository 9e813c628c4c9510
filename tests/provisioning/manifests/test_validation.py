"""Given a rendered object with a typical mistake, when it is validated, then validation names the object,
the JSON path and the problem. And the cached validator agrees with `kubernetes_validate.validate`."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from provisioning.manifests import ManifestInvalid, render, render_all, validate_objects
from provisioning.manifests.validation import object_problems
from provisioning.manifests.spec import GangSpec

from .matrix import cases

CASES = {case.id: case for case in cases()}


def _objects(case_id: str) -> list[dict]:
    case = CASES[case_id]
    return render_all(case.team, case.request, case.cluster)


def _one(objects, kind, api_prefix=""):
    (found,) = [o for o in objects if o["kind"] == kind and o["apiVersion"].startswith(api_prefix)]
    return copy.deepcopy(found)


def _problems(obj, version):
    with pytest.raises(ManifestInvalid) as excinfo:
        validate_objects([obj], version)
    return excinfo.value


def test_v1beta1_style_dra_request_is_rejected_for_resource_k8s_io_v1():
    template = _one(_objects("whole_gpu-dra-none-1.34-inference-plain"), "ResourceClaimTemplate")
    request = template["spec"]["spec"]["devices"]["requests"][0]
    # The v1beta1 shape: deviceClassName and count directly under requests[], no `exactly`.
    request.update(request.pop("exactly"))
    error = _problems(template, "1.34")
    text = str(error)
    assert "ResourceClaimTemplate/inference-whole-gpu" in text
    assert "$.spec.spec.devices.requests[0]" in text
    assert "deviceClassName" in text


def test_minavailable_in_a_volcano_pod_group_is_rejected():
    pod_group = _one(_objects("whole_gpu-device_plugin-volcano-1.36-training_gang-plain"), "PodGroup")
    pod_group["spec"]["minAvailable"] = 4
    error = _problems(pod_group, "1.36")
    assert any(p.path == "$.spec" and "minAvailable" in p.message for p in error.problems), error


def test_kai_pod_group_with_min_member_zero_is_rejected():
    pod_group = _one(_objects("whole_gpu-device_plugin-kai-1.36-training_gang-plain"), "PodGroup")
    pod_group["spec"]["minMember"] = 0
    error = _problems(pod_group, "1.36")
    assert any(p.path == "$.spec.minMember" for p in error.problems), error


def test_workload_ref_on_a_1_36_pod_is_rejected():
    job = _one(_objects("whole_gpu-device_plugin-native-1.36-training_gang-plain"), "Job")
    pod = job["spec"]["template"]["spec"]
    del pod["schedulingGroup"]
    pod["workloadRef"] = {"name": "x", "podGroup": "workers"}  # the 1.35 field, tombstoned in 1.36
    error = _problems(job, "1.36")
    assert any(p.path == "$.spec.template.spec" and "workloadRef" in p.message for p in error.problems), error


def test_the_same_job_renders_valid_for_1_35_with_workload_ref():
    objects = _objects("whole_gpu-device_plugin-native-1.35-training_gang-plain")
    assert validate_objects(objects, "1.35") == len(objects)
    assert "workloadRef" in _one(objects, "Job")["spec"]["template"]["spec"]


def test_a_1_35_workload_is_unknown_on_1_36():
    workload = _one(_objects("whole_gpu-device_plugin-native-1.35-training_gang-plain"), "Workload")
    error = _problems(workload, "1.36")
    assert "no schema for scheduling.k8s.io/v1alpha1 Workload on Kubernetes 1.36" in str(error)


def test_a_1_36_pod_group_shape_is_rejected_on_1_37():
    pod_group = _one(_objects("whole_gpu-device_plugin-native-1.36-training_gang-plain"), "PodGroup")
    pod_group["apiVersion"] = "scheduling.k8s.io/v1beta1"  # v1alpha2 is gone; podGroupTemplateRef was renamed
    error = _problems(pod_group, "1.37")
    assert any("podGroupTemplateRef" in p.message for p in error.problems), error


def test_kueue_local_queue_with_unknown_field_is_rejected():
    queue = _one(_objects("whole_gpu-device_plugin-kueue-1.36-training_gang-plain"), "LocalQueue")
    queue["spec"]["cohort"] = "ml"
    error = _problems(queue, "1.36")
    assert any("cohort" in p.message for p in error.problems), error


def test_invalid_label_value_and_service_name_are_rejected():
    objects = _objects("whole_gpu-device_plugin-none-1.36-inference-plain")
    service = _one(objects, "Service")
    service["metadata"]["name"] = "7b-llama"
    service["metadata"]["labels"]["gpu-portal.example.com/cost"] = "CC 1234/ML"
    error = _problems(service, "1.36")
    paths = {p.path for p in error.problems}
    assert "$.metadata.name" in paths
    assert "$.metadata.labels['gpu-portal.example.com/cost']" in paths


def test_unknown_field_in_a_built_in_kind_is_rejected_by_strict_validation():
    job = _one(_objects("whole_gpu-device_plugin-none-1.36-training_single-plain"), "Job")
    job["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    error = _problems(job, "1.36")
    assert any(p.path == "$.spec.template.spec.containers[0]" for p in error.problems), error


def test_every_problem_is_listed_in_one_error():
    objects = _objects("whole_gpu-device_plugin-volcano-1.36-training_gang-plain")
    broken = copy.deepcopy(objects)
    for obj in broken:
        if obj["kind"] == "PodGroup":
            obj["spec"]["minAvailable"] = 1
        if obj["kind"] == "Job":
            obj["spec"]["completionsMode"] = "Indexed"
    with pytest.raises(ManifestInvalid) as excinfo:
        validate_objects(broken, "1.36")
    kinds = {p.kind for p in excinfo.value.problems}
    assert kinds == {"PodGroup", "Job"}


@pytest.mark.parametrize(
    "case_id",
    [
        "whole_gpu-dra-native-1.36-training_gang-exclusive_clique_driver",
        "mig_mixed-device_plugin-native-1.35-training_gang-plain",
        "ts_renamed-dra-native-1.37-training_gang-plain",
        "mig_single-device_plugin-none-1.34-inference-exclusive_host",
        "ts_plain-dra-kueue-1.37-development-plain",
    ],
)
def test_cached_validator_agrees_with_kubernetes_validate(case_id):
    case = CASES[case_id]
    version = case.cluster.kubernetes_version
    objects = render(case.request, case.cluster)
    good = [o for o in objects if "." not in o["apiVersion"].rpartition("/")[0] or ".k8s.io/" in o["apiVersion"]]
    # A broken copy of each: an unknown field where the schema is strict.
    bad = [dict(copy.deepcopy(o), spec={**o["spec"], "notAField": True}) for o in good]
    for obj in good + bad:
        ours = [p for p in object_problems(obj, int(version.split(".")[1])) if p.path != "$.metadata.name"]
        try:
            kubernetes_validate.validate(obj, f"{version}.0", strict=True)
            library_ok = True
        except kubernetes_validate.ValidationError:
            library_ok = False
        assert library_ok == (not ours), (obj["kind"], ours)


def test_gang_request_validates_on_every_backend_with_a_smaller_minimum():
    case = CASES["whole_gpu-device_plugin-kai-1.37-training_gang-plain"]
    request = case.request.__class__(**{**case.request.__dict__, "gang": GangSpec(min_members=2, backend="kai")})
    objects = render(request, case.cluster)
    assert validate_objects(objects, "1.37") == len(objects)
    assert _one(objects, "PodGroup")["spec"]["minMember"] == 2


def test_volcano_pod_group_on_1_37_is_checked_against_its_crd_not_the_native_pod_group():
    # kubernetes-validate names schema files without the group domain, so on 1.37 it would check this object
    # against scheduling.k8s.io/v1beta1 PodGroup and reject it; custom groups must go to the CRD schemas.
    pod_group = _one(_objects("whole_gpu-device_plugin-volcano-1.37-training_gang-plain"), "PodGroup")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(pod_group, "1.37.0", strict=True)
    assert validate_objects([pod_group], "1.37") == 1
    pod_group["spec"]["minAvailable"] = 4
    assert any("minAvailable" in p.message for p in _problems(pod_group, "1.37").problems)

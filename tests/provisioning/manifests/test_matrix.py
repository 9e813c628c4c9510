"""Given every combination of workload class, sharing strategy, scheduling model, gang backend, Kubernetes
version and isolation variant, when the renderer renders it, then every object is schema-valid for that
version (or the renderer refuses with a clear RenderError where the combination is impossible)."""

from __future__ import annotations

import pytest

from provisioning.manifests import ManifestInvalid, RenderError, render_all, validate_objects
from provisioning.manifests.labels import selector_for_request

from .matrix import cases, expected_object_count

CASES = cases()
CASE_IDS = [case.id for case in CASES]
# The count the matrix must validate, computed by hand from the rules in matrix.expected_object_count():
# 6 strategy variants x 2 models x 5 backends x 4 versions x 4 shapes x 4 isolation variants = 3840 cases, of
# which 6*2*4 (backend none) * 4 versions + 6*2*4 (native on 1.34) = 240 training-gang cases must be refused.
EXPECTED_CASES = 3840
EXPECTED_REFUSALS = 240
# Objects validated, by hand: the 6 strategy variants x 4 isolation variants do not change counts (x24).
# Per (backend, version), the three non-gang shapes give 6T + 15 objects over both models (T = team objects:
# 3 with a queue for volcano/kai/kueue, else 2; +1 ResourceClaim(Template) under DRA): 153 per version, 612.
# Gang training: volcano 52, kai 52, kueue 44, native 11 (1.35) + 13 (1.36) + 13 (1.37) = 185.
# (612 + 185) x 24 = 19128 before NetworkPolicies. Every rendered case (3840 - 240 = 3600) adds a
# default-deny-ingress policy, and the three isolation variants other than "plain" declare an ingress controller,
# adding its policy (3 x 900). 19128 + 3600 + 2700 = 25428.
EXPECTED_VALIDATED = 25428


@pytest.fixture(scope="module")
def results():
    """Render and validate the whole matrix once: case id -> (objects or None, error message or None)."""
    outcome = {}
    for case in CASES:
        try:
            objects = render_all(case.team, case.request, case.cluster)
        except RenderError as exc:
            outcome[case.id] = (None, f"RenderError: {exc}")
            continue
        try:
            validate_objects(objects, case.cluster.kubernetes_version)
        except ManifestInvalid as exc:
            outcome[case.id] = (objects, f"ManifestInvalid: {exc}")
            continue
        outcome[case.id] = (objects, None)
    return outcome


def test_matrix_size():
    assert len(CASES) == EXPECTED_CASES
    assert sum(1 for case in CASES if case.error) == EXPECTED_REFUSALS


def test_every_object_of_the_matrix_validates_and_count_is_recorded(results):
    failures = [
        f"{case.id}: {results[case.id][1]}" for case in CASES if case.error is None and results[case.id][1] is not None
    ]
    assert not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(failures[:20])
    validated = sum(len(results[case.id][0]) for case in CASES if case.error is None)
    expected = sum(expected_object_count(case) for case in CASES if case.error is None)
    rendered_cases = EXPECTED_CASES - EXPECTED_REFUSALS
    print(
        f"\nrender matrix: {rendered_cases} cases rendered, {EXPECTED_REFUSALS} refused, {validated} objects validated"
    )
    assert validated == expected == EXPECTED_VALIDATED


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case(case, results):
    objects, error = results[case.id]
    if case.error:
        assert (
            error is not None and error.startswith("RenderError") and case.error in error
        ), f"{case.id}: expected RenderError containing {case.error!r}, got {error!r}"
        return
    assert error is None, f"{case.id}: {error}"
    assert len(objects) == expected_object_count(case), [o["kind"] for o in objects]
    _check_invariants(case, objects)


def _pod_templates(objects):
    return [o["spec"]["template"] for o in objects if o["kind"] in ("Job", "Deployment")]


def _check_invariants(case, objects):
    domain = case.cluster.label_domain
    request = case.request
    selector = selector_for_request(request.request_id, domain)
    kinds = [o["kind"] for o in objects]
    # Apply order: namespace first, workload last.
    assert kinds[0] == "Namespace" and kinds[-1] in ("Job", "Deployment"), kinds
    for obj in objects[len(kinds) - _request_object_count(case, objects) :]:
        labels = obj["metadata"]["labels"]
        assert selector.items() <= labels.items(), (obj["kind"], labels)
        for key in ("team", "strategy", "workload-class", "cluster"):
            assert f"{domain}/{key}" in labels, (obj["kind"], key)
    (template,) = _pod_templates(objects)
    pod_labels, pod_annotations, pod = (
        template["metadata"]["labels"],
        template["metadata"]["annotations"],
        template["spec"],
    )
    assert selector.items() <= pod_labels.items()
    assert pod_annotations[f"{domain}/gpu-equivalents"] == request.gpu_equivalents_per_replica
    assert pod_annotations[f"{domain}/devices"] == str(request.gpus_per_replica)
    assert (f"{domain}/mig-profile" in pod_annotations) == (request.strategy == "mig")
    limits = pod["containers"][0]["resources"]["limits"]
    gpu_limits = {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}
    if case.cluster.scheduling_model == "dra":
        assert not gpu_limits, "DRA pods must not ask for device-plugin resources"
        assert pod["resourceClaims"][0]["name"] == "gpu"
        assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    else:
        assert len(gpu_limits) == 1 and "resourceClaims" not in pod
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    affinity = pod.get("affinity", {})
    node_terms = affinity.get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {})
    expressions = node_terms.get("nodeSelectorTerms", [{}])[0].get("matchExpressions", [])
    clique_required = {"key": "nvidia.com/gpu.clique", "operator": "Exists"} in expressions
    if request.fabric_isolation == "tenant_exclusive":
        term = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        expected_key = "nvidia.com/gpu.clique" if case.cluster.pool.nvlink_domain else "kubernetes.io/hostname"
        assert term["topologyKey"] == expected_key and term["namespaceSelector"] == {}
        assert clique_required == bool(case.cluster.pool.nvlink_domain)
    else:
        assert "podAntiAffinity" not in affinity and not clique_required
    driver_floor = {"key": "nvidia.com/cuda.driver-version.major", "operator": "Gt", "values": ["549"]}
    # DRA: the claim's CEL selector carries the floor; the GFD label only where the pool's nodes are known to have it.
    by_label = case.cluster.scheduling_model != "dra" or case.cluster.pool.driver_major_label is True
    assert (driver_floor in expressions) == (bool(request.driver_min_major) and by_label)


def _request_object_count(case, objects):
    team_objects = sum(1 for o in objects if "request-id" not in str(o["metadata"].get("labels", {})))
    return len(objects) - team_objects

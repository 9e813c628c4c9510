"""Given every combination of workload class, sharing strategy, scheduling model, gang backend, Kubernetes
version and isolation variant, when the renderer renders it, then every object is schema-valid for that
version and semantically valid on the cluster it targets (tests/support/semantic.py: schedulers, node selection,
taints, resource names, claims, quota, queues, gangs), or the renderer refuses with a clear RenderError where the
combination is impossible.

One test per family (shape x strategy variant x scheduling model x gang backend: 240), each looping over its
4 Kubernetes versions x 4 isolation variants and asserting the exact number of objects it validated.
"""

from __future__ import annotations

import itertools

import pytest

from provisioning.manifests import RenderError, render_all, validate_objects
from provisioning.manifests.labels import selector_for_request
from tests.support.semantic import assert_schedulable

from .inventory import admitted_for, inventory_for
from .priority_fields import check_priority_fields, expected_priority_fields
from .matrix import BACKENDS, POOLS, SCHEDULING_MODELS, SHAPES, cases, expected_object_count, priority_object_count

CASES = cases()
# The count the matrix must validate, computed by hand from the rules in matrix.expected_object_count():
# 6 strategy variants x 2 models x 5 backends x 4 versions x 4 shapes x 4 isolation variants = 3840 cases, of
# which 6*2*4 (backend none) * 4 versions + 6*2*4 (native on 1.34) = 240 training-gang cases must be refused, and
# on DRA under Kueue every MPS case (no claim config: no MPS server; Kueue admits every GPU workload of its cluster,
# issue 23 item 7): 4 shapes x 4 versions x 4 isolation variants = 64: 304.
EXPECTED_CASES = 3840
EXPECTED_REFUSALS = 304
# Objects schema-validated, by hand: the 6 strategy variants x 4 isolation variants do not change counts (x24).
# Per (backend, version), the three non-gang shapes give 6T + 15 objects over both models (T = team objects:
# 3 with a queue for volcano/kai/kueue, else 2; +1 ResourceClaim(Template) under DRA): 153 per version, 612.
# Gang training: volcano 52, kai 52, kueue 44, native 11 (1.35) + 13 (1.36) + 13 (1.37) = 185.
# (612 + 185) x 24 = 19128 before NetworkPolicies. Every rendered case (3840 - 240 = 3600) adds a
# default-deny-ingress policy, and the three isolation variants other than "plain" declare an ingress controller,
# adding its policy (3 x 900). 19128 + 3600 + 2700 = 25428. Less the 16 refused MPS-on-DRA Kueue gangs: 4 versions x
# (6 objects + a default-deny policy, + an ingress policy in 3 of the 4 variants) = 4 x 31 = 124: 25304. Less the
# 48 refused MPS-on-DRA Kueue non-gang cases: per version, over the 4 variants, team objects 4 + 3 x 5 = 19 per shape
# plus 4 claim templates and the shape's own objects x4 (single training 2, inference 3, development 1): 31 + 35 + 27
# = 93, x4 versions = 372: 24932. Clusters without Kueue (every matrix cluster serves admission policies) add a
# ValidatingAdmissionPolicy and its binding per case (issue 23 item 8): 4 backends x 6 x 2 x 4 x 4 x 4 = 3072 cases,
# less the 240 refused (backend none, native on 1.34) = 2832 cases, x2 = 5664: 30596.
# Priority (matrix.PRIORITIES): every rendered case (3840 - 304 = 3536) adds its tier's PriorityClass, and each
# rendered case on a Kueue cluster (704, below) its WorkloadPriorityClass: 30596 + 3536 + 704 = 34836.
EXPECTED_VALIDATED = 34836
# Objects a semantic rule examined (every object but Namespaces, NetworkPolicies, Services and PDBs), by hand:
# per case ResourceQuota 1 + queue Q (1 for volcano/kai/kueue) + claim template D (1 under DRA) + gang objects +
# the workload 1. Non-gang shapes over both models: 3 x (5 + 2Q) per version: 21 (Q=1, x3 backends) + 15 (x2) =
# 93, x4 versions = 372. Gang training over both models and versions: volcano 4x(4+5) = 36, kai 36,
# kueue 4x(3+4) = 28, native (3+4) + 2x(4+5) = 25: 125. (372 + 125) x 24 = 11928, less the 16 refused MPS-on-DRA
# Kueue gangs (quota, LocalQueue, claim template, Job: 4 each): 11864, less the 48 refused MPS-on-DRA Kueue non-gang
# cases (quota, LocalQueue, claim template, workload: 4 each): 11672, plus the 2832 policies and 2832 bindings the
# admission-policy rule examines: 17336. The priority rule examines the 3536 PriorityClasses and 704
# WorkloadPriorityClasses: 17336 + 3536 + 704 = 21576.
EXPECTED_SEMANTIC = 21576
# ValidatingAdmissionPolicies (each with its binding) rendered and checked: one per case without Kueue, 2832.
EXPECTED_POLICIES = 2832
# GPU workloads that go through the team's Kueue LocalQueue (issue 23 item 7): every rendered case on a Kueue
# cluster, gang or not: 6 strategy variants x 2 models x 4 versions x 4 shapes x 4 isolation variants = 768, less
# the 64 refused MPS-on-DRA cases: 704.
EXPECTED_QUEUED = 704
# Priority fields asserted (priority_fields.py), by hand: per strategy variant x model x isolation variant (48) and
# over the 4 versions: volcano 4 x (gang 6 + single 4 + inference 3 + development 3) = 64, kai 4 x (6 + 4 + 4 + 4)
# = 72, kueue 4 x 4 shapes x 4 (pod class and grace, owner and pod priority-class label) = 64, native 4 x 3 x 2 +
# gangs (1.35: 2, 1.36: 4, 1.37: 6) = 36, none 4 x 3 x 2 = 24: 260 x 48 = 12480, less the 64 refused MPS-on-DRA
# Kueue cases (4 each): 12224.
EXPECTED_PRIORITY_FIELDS = 12224

FAMILIES = list(itertools.product(SHAPES, POOLS, SCHEDULING_MODELS, BACKENDS))
COUNTED: dict[str, int] = {"rendered": 0, "refused": 0, "validated": 0, "semantic": 0, "queued": 0, "policies": 0,
                           "priority_fields": 0}


def _family(shape: str, strategy: str, model: str, backend: str) -> list:
    return [
        case
        for case in CASES
        if case.request.workload_class == shape.split("_")[0]
        and (case.request.gang is not None) == (shape == "training_gang")
        and case.id.startswith(f"{strategy}-{model}-{backend}-")
    ]


def expected_semantic_count(case) -> int:
    """Objects the semantic checker must examine for a case, counted from the rules rather than from the checker."""
    backend, minor = case.cluster.gang_scheduler, case.cluster.kubernetes_version
    count = 1 + (1 if backend in ("volcano", "kai", "kueue") else 0)  # ResourceQuota, team queue
    count += 2 if case.cluster.admission_policies and backend != "kueue" else 0  # admission policy + binding
    count += 1 if case.cluster.scheduling_model == "dra" else 0  # ResourceClaimTemplate
    if case.request.gang:
        count += {"volcano": 1, "kai": 1, "kueue": 0, "native": 1 if minor == "1.35" else 2}[backend]
    return count + priority_object_count(case) + 1  # priority classes, the workload


def test_matrix_size():
    assert len(CASES) == EXPECTED_CASES
    assert sum(1 for case in CASES if case.error) == EXPECTED_REFUSALS
    assert len(FAMILIES) == 240
    # Every case belongs to exactly one family of 16 (4 versions x 4 isolation variants).
    members = [case.id for family in FAMILIES for case in _family(*family)]
    assert sorted(members) == sorted(case.id for case in CASES)
    assert {len(_family(*family)) for family in FAMILIES} == {16}


def test_hand_counts_agree_with_the_rules():
    rendered = [case for case in CASES if case.error is None]
    assert sum(expected_object_count(case) for case in rendered) == EXPECTED_VALIDATED
    assert sum(expected_semantic_count(case) for case in rendered) == EXPECTED_SEMANTIC
    assert sum(expected_priority_fields(case) for case in rendered) == EXPECTED_PRIORITY_FIELDS
    assert sum(1 for case in rendered if case.cluster.gang_scheduler == "kueue") == EXPECTED_QUEUED
    assert sum(1 for case in rendered if case.cluster.gang_scheduler != "kueue") == EXPECTED_POLICIES


@pytest.mark.parametrize("family", FAMILIES, ids=["-".join(family) for family in FAMILIES])
def test_family(family):
    family_cases = _family(*family)
    validated = semantic = refused = queued = policies = priority_fields = 0
    for case in family_cases:
        if case.error:
            with pytest.raises(RenderError) as refusal:
                render_all(case.team, case.request, case.cluster)
            assert case.error in str(refusal.value), f"{case.id}: {refusal.value}"
            refused += 1
            continue
        objects = render_all(case.team, case.request, case.cluster)
        validate_objects(objects, case.cluster.kubernetes_version)
        report = assert_schedulable(objects, inventory_for(case.cluster), admitted_for(case.team, case.request))
        assert len(objects) == expected_object_count(case), (case.id, [o["kind"] for o in objects])
        assert report.objects_checked == expected_semantic_count(case), (case.id, report.objects_checked)
        _check_invariants(case, objects)
        fields = check_priority_fields(case, objects)
        assert fields == expected_priority_fields(case), (case.id, fields)
        priority_fields += fields
        queued += _queued_through_kueue(case, objects)
        policies += _admission_policy(case, objects)
        validated += len(objects)
        semantic += report.objects_checked
    rendered = [case for case in family_cases if case.error is None]
    assert validated == sum(expected_object_count(case) for case in rendered)
    assert semantic == sum(expected_semantic_count(case) for case in rendered)
    assert queued == sum(1 for case in rendered if case.cluster.gang_scheduler == "kueue")
    assert policies == sum(1 for case in rendered if case.cluster.gang_scheduler != "kueue")
    for key, value in (("rendered", len(rendered)), ("refused", refused), ("validated", validated),
                       ("semantic", semantic), ("queued", queued), ("policies", policies),
                       ("priority_fields", priority_fields)):  # fmt: skip
        COUNTED[key] += value


def _queued_through_kueue(case, objects) -> int:
    """1 when the case's workload and its pods name the team's LocalQueue (asserted on every Kueue cluster)."""
    if case.cluster.gang_scheduler != "kueue":
        assert not any("kueue.x-k8s.io/queue-name" in str(o["metadata"].get("labels")) for o in objects), case.id
        return 0
    workload, (template,) = objects[-1], _pod_templates(objects)
    queue = {"kueue.x-k8s.io/queue-name": "gpu-ml-research"}
    assert queue.items() <= workload["metadata"]["labels"].items(), case.id
    assert queue.items() <= template["metadata"]["labels"].items(), case.id
    return 1


def _admission_policy(case, objects) -> int:
    """1 when a case without Kueue has the team's ValidatingAdmissionPolicy and binding, before the workload, and
    its approvals name this request (asserted on every such case); a Kueue case has neither."""
    kinds = [o["kind"] for o in objects]
    if case.cluster.gang_scheduler == "kueue":
        assert "ValidatingAdmissionPolicy" not in kinds and "ValidatingAdmissionPolicyBinding" not in kinds, case.id
        return 0
    policy, binding = (objects[kinds.index(k)] for k in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"))
    assert kinds.index("ValidatingAdmissionPolicy") < kinds.index("ValidatingAdmissionPolicyBinding") < len(kinds) - 1
    assert binding["spec"]["policyName"] == policy["metadata"]["name"] and binding["spec"]["validationActions"] == ["Deny"]
    owners = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "owners")
    assert f"'{case.request.request_id}': " in owners, (case.id, owners)
    return 1


_TEAM_KINDS = ("Namespace", "ResourceQuota", "NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
               "Queue", "LocalQueue", "PriorityClass",
               "WorkloadPriorityClass")


def _pod_templates(objects):
    return [o["spec"]["template"] for o in objects if o["kind"] in ("Job", "Deployment")]


def _check_invariants(case, objects):
    domain = case.cluster.label_domain
    request = case.request
    selector = selector_for_request(request.request_id, domain)
    kinds = [o["kind"] for o in objects]
    # Apply order: namespace first, workload last; the priority classes before everything that names them.
    assert kinds[0] == "Namespace" and kinds[-1] in ("Job", "Deployment"), kinds
    assert kinds.index("PriorityClass") < min(i for i, k in enumerate(kinds) if k not in _TEAM_KINDS), kinds
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

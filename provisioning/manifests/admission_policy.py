"""Clusters without Kueue: a ValidatingAdmissionPolicy and its binding per team namespace that refuse GPU pods the
portal did not approve (issue 23, item 8). No webhook to run: the API server evaluates the CEL itself.

Read from kubernetes/api v0.35.0 `admissionregistration/v1/types.go` (GA since 1.30, `+k8s:prerelease-lifecycle-gen:
introduced=1.30`): the policy (cluster-scoped) has `matchConstraints` (MatchResources: `namespaceSelector`,
`resourceRules`), `matchConditions` (evaluated first; a request that fails one is not validated), `variables`
(composited, `variables.<name>`), `validations` (`expression`, `messageExpression`, `reason`) and `failurePolicy`
(Fail: a CEL error refuses too); the binding (cluster-scoped) names the policy (`policyName`), narrows
`matchResources` and sets `validationActions` (Deny). No `paramKind`: the approvals are inline CEL constants,
because several params of one binding are evaluated separately and ANDed (ParamRef.selector), so per-request
params could not say "this pod's request is one of the approved ones".

A GPU pod (an NVIDIA extended resource in a container's limits or requests, or a DRA claim) created in the team
namespace is admitted only if:
1. its request-id label names a request approved for this namespace (one whose objects the portal applied);
2. its controller owner reference is that request's workload: the Job by name (a JobSet's child Job is named
   `<jobset>-workers-0`), or a ReplicaSet named `<deployment>-<hash>` (the Deployment controller names them so);
3. only one container holds GPUs, and no more of each NVIDIA resource than the approved pod asks;
4. its DRA claims come from the request's own ResourceClaimTemplates (never a ResourceClaim made by hand).

What CEL at pod admission cannot verify (docs/admission-check.md, "Clusters without Kueue"): it sees only the pod
being created and its namespace, never another object, so it cannot look up that the owner reference's UID is the
portal's object (a pod made by hand with a copied owner reference passes rule 2; the garbage collector deletes it
if the UID is not its owner's, and the ReplicaSet or Job controller deletes pods beyond its count if it is), nor read
a ResourceClaimTemplate's device count (the ResourceQuota caps DRA devices per class), nor count the pods of a
request (the ResourceQuota caps the namespace's total, which approval sets).
"""
from __future__ import annotations

from gpu.vocabulary import KUEUE

from ..contract import REQUEST_ID, domain_key
from .labels import team_labels
from .names import k8s_name, team_namespace
from .restart import child_job_name
from .spec import ApprovedPods, ClusterProfile

API_VERSION = "admissionregistration.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server (1.22+)
GPU_RESOURCE_PREFIX = "nvidia.com/"


def _pod_template(workload: dict) -> dict:
    if workload["kind"] == "JobSet":
        return workload["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return workload["spec"]["template"]


def approved_pods(request_id: int, objects: list[dict]) -> ApprovedPods:
    """The approval of one request, read from its rendered objects (the workload is the last)."""
    workload = objects[-1]
    kind, name = workload["kind"], workload["metadata"]["name"]
    owner = {"Job": ("Job", name), "JobSet": ("Job", child_job_name(name)), "Deployment": ("ReplicaSet", name)}[kind]
    pod = _pod_template(workload)["spec"]
    limits: dict[str, int] = {}
    for container in pod.get("containers", []):
        for resource, amount in (container.get("resources", {}).get("limits") or {}).items():
            if resource.startswith(GPU_RESOURCE_PREFIX):
                limits[resource] = limits.get(resource, 0) + int(amount)
    claims = tuple(sorted(c["resourceClaimTemplateName"] for c in pod.get("resourceClaims") or []
                          if c.get("resourceClaimTemplateName")))  # fmt: skip
    return ApprovedPods(int(request_id), owner[0], owner[1], tuple(sorted(limits.items())), claims)


def policy_name(team_slug: str) -> str:
    return k8s_name("gpu-portal-pods", team_namespace(team_slug))


# --- CEL -------------------------------------------------------------------------------------------------------


def _cel_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _cel_map(entries: dict[str, str | int]) -> str:
    items = ", ".join(f"{_cel_string(k)}: {v if isinstance(v, int) else _cel_string(v)}"
                      for k, v in sorted(entries.items()))  # fmt: skip
    return "{" + items + "}"


def _gpu_keys(part: str) -> str:
    return (f"(has(c.resources) && has(c.resources.{part}) && "
            f"c.resources.{part}.exists(k, k.startsWith('{GPU_RESOURCE_PREFIX}')))")


def _holds_gpus(containers: str) -> str:
    return f"{containers}.exists(c, {_gpu_keys('limits')} || {_gpu_keys('requests')})"


def _fits(part: str) -> str:
    # Every NVIDIA resource of the container is one the request's pods hold, and no more of it (a Quantity: "2").
    return (f"(!has(c.resources) || !has(c.resources.{part}) || c.resources.{part}.all(k, "
            f"!k.startsWith('{GPU_RESOURCE_PREFIX}') || ((variables.rid + '|' + k) in variables.limits && "
            f"quantity(string(c.resources.{part}[k])).compareTo(quantity(string(variables.limits[variables.rid + '|' + k]))) <= 0)))")


def _all_containers(expression: str) -> str:
    return (f"object.spec.containers.all(c, {expression}) && "
            f"(!has(object.spec.initContainers) || object.spec.initContainers.all(c, {expression}))")


def policy_variables(approvals: list[ApprovedPods], label_domain: str) -> list[dict]:
    request_label = domain_key(label_domain, REQUEST_ID)
    owners = {str(a.request_id): f"{a.owner_kind}/{a.owner_name}" + ("-" if a.owner_kind == "ReplicaSet" else "")
              for a in approvals}  # fmt: skip
    limits = {f"{a.request_id}|{resource}": amount for a in approvals for resource, amount in a.limits}
    claims = sorted(f"{a.request_id}|{name}" for a in approvals for name in a.claim_templates)
    return [
        {"name": "rid", "expression": f"has(object.metadata.labels) && {_cel_string(request_label)} in "
                                      f"object.metadata.labels ? object.metadata.labels[{_cel_string(request_label)}] "
                                      ": ''"},
        {"name": "controller", "expression": "has(object.metadata.ownerReferences) ? object.metadata.ownerReferences"
                                             ".filter(r, has(r.controller) && r.controller) : []"},
        # Inline constants, one map per kind of value (Kubernetes CEL wants homogeneous literals).
        {"name": "owners", "expression": _cel_map(owners)},
        {"name": "limits", "expression": _cel_map(limits)},
        {"name": "claims", "expression": "[" + ", ".join(_cel_string(c) for c in claims) + "]"},
    ]


def policy_validations(namespace: str) -> list[dict]:
    here = f"in namespace {namespace}"
    return [
        {"expression": "variables.rid in variables.owners", "reason": "Forbidden",
         "message": f"GPU pods {here} run only for requests the GPU portal approved here.",
         "messageExpression": (f"'GPU pods {here} run only for requests the GPU portal approved here; this pod names "
                               "request ' + (variables.rid == '' ? '(none)' : variables.rid) + ', which is not one. "
                               "Submit a request to the portal.'")},
        {"expression": ("!(variables.rid in variables.owners) || (size(variables.controller) == 1 && "
                        "((variables.controller[0].kind + '/' + variables.controller[0].name) == "
                        "variables.owners[variables.rid] || (variables.owners[variables.rid].endsWith('-') && "
                        "(variables.controller[0].kind + '/' + variables.controller[0].name)"
                        ".startsWith(variables.owners[variables.rid]))))"),
         "reason": "Forbidden",
         "message": f"GPU pods {here} must belong to the workload the GPU portal applied for their request.",
         "messageExpression": (f"'GPU pods {here} must belong to the workload the GPU portal applied for request ' + "
                               "variables.rid + ' (' + variables.owners[variables.rid] + '...).'")},
        {"expression": f"object.spec.containers.filter(c, {_gpu_keys('limits')} || {_gpu_keys('requests')}).size() <= 1",
         "reason": "Forbidden", "message": f"GPU pods {here} hold their GPUs in one container."},
        {"expression": _all_containers(f"{_fits('limits')} && {_fits('requests')}"), "reason": "Forbidden",
         "message": f"GPU pods {here} may hold no more GPUs per pod than their request was approved for."},
        {"expression": ("!has(object.spec.resourceClaims) || object.spec.resourceClaims.all(c, "
                        "has(c.resourceClaimTemplateName) && (variables.rid + '|' + c.resourceClaimTemplateName) "
                        "in variables.claims)"),
         "reason": "Forbidden",
         "message": f"GPU pods {here} take DRA devices only from their request's ResourceClaimTemplates."},
    ]


def build_admission_policy(team_slug: str, cluster: ClusterProfile, approvals: list[ApprovedPods]) -> dict:
    namespace = team_namespace(team_slug)
    gpu_pod = (f"{_holds_gpus('object.spec.containers')} || (has(object.spec.initContainers) && "
               f"{_holds_gpus('object.spec.initContainers')}) || "
               "(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)")
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name(team_slug), "labels": team_labels(team_slug, cluster)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}},
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                   "resources": ["pods"]}],
            },
            "matchConditions": [{"name": "holds-gpus", "expression": gpu_pod}],
            "variables": policy_variables(approvals, cluster.label_domain),
            "validations": policy_validations(namespace),
        },
    }


def build_admission_policy_binding(team_slug: str, cluster: ClusterProfile) -> dict:
    namespace = team_namespace(team_slug)
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name(team_slug), "labels": team_labels(team_slug, cluster)},
        "spec": {
            "policyName": policy_name(team_slug),
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}},
        },
    }


def admission_policy_objects(team_slug: str, cluster: ClusterProfile, approvals: list[ApprovedPods]) -> list[dict]:
    """The policy and its binding, for clusters that serve them and admit GPU work without Kueue; else nothing."""
    if not renders_admission_policy(cluster):
        return []
    return [build_admission_policy(team_slug, cluster, approvals), build_admission_policy_binding(team_slug, cluster)]


def renders_admission_policy(cluster: ClusterProfile) -> bool:
    # On a Kueue cluster the portal's admission check holds the work Kueue admits (docs/admission-check.md).
    return cluster.admission_policies and cluster.gang_scheduler != KUEUE

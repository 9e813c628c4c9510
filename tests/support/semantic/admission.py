"""Rules on who admits a team's GPU pods: Kueue's LocalQueue on a Kueue cluster (kueue-queue), the portal's
ValidatingAdmissionPolicy elsewhere (admission-policy)."""

from __future__ import annotations

import ast

from .base import CheckerBase, PodSet
from .cel_syntax import cel_syntax_error
from .model import KUEUE_QUEUE_LABEL

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def holds_gpus(template: dict) -> bool:
    """Does a pod of this template ask for a GPU (an NVIDIA extended resource, or a DRA claim)?"""
    spec = template.get("spec") or {}
    if spec.get("resourceClaims"):
        return True
    return any(
        resource.startswith("nvidia.com/")
        for container in spec.get("containers", []) + spec.get("initContainers", [])
        for part in ("limits", "requests")
        for resource in ((container.get("resources") or {}).get(part) or {})
    )


class AdmissionRules(CheckerBase):
    # kueue-queue --------------------------------------------------------------------------------------------------

    def check_kueue_queue(self, pods: PodSet) -> None:
        """On a Kueue cluster, Kueue's quota describes what is free only if every GPU pod is admitted through it
        (kueue v0.19.2: it manages only objects carrying `kueue.x-k8s.io/queue-name`, `pkg/controller/jobframework/
        reconciler.go`; Deployments through `pkg/controller/jobs/deployment/deployment_webhook.go`). The workload and
        its pod template name the team's LocalQueue (the one in the workload's namespace), and a Job or JobSet is
        created suspended, so no pod starts before admission."""
        if not self.inventory.kueue or not holds_gpus(pods.template):
            return
        workload = pods.workload
        namespace = workload["metadata"].get("namespace")
        queues = sorted(q["metadata"]["name"] for q in self.by_kind.get("LocalQueue", [])
                        if q["metadata"].get("namespace") == namespace)  # fmt: skip
        team_queue = queues[0] if queues else None
        on_pods = (pods.template.get("metadata") or {}).get("labels", {}).get(KUEUE_QUEUE_LABEL)
        on_workload = workload["metadata"].get("labels", {}).get(KUEUE_QUEUE_LABEL)
        if team_queue is None:
            self.problem("kueue-queue", workload, f"the set has no LocalQueue in namespace {namespace}: its GPU pods "
                                                  "cannot go through Kueue.")  # fmt: skip
            return
        for where, value in (("its GPU pods", on_pods), ("it", on_workload)):
            if value != team_queue:
                self.problem(
                    "kueue-queue", workload,
                    f"{where} name LocalQueue {value!r} ({KUEUE_QUEUE_LABEL}), not the team's {team_queue!r}: the GPUs "
                    "they hold would bypass Kueue's quota, which then no longer describes what is free.",
                )  # fmt: skip
        if workload["kind"] in ("Job", "JobSet") and workload["spec"].get("suspend") is not True:
            self.problem("kueue-queue", workload, "it is not created suspended: its pods would start before Kueue "
                                                  "admits it.")  # fmt: skip

    # admission-policy ---------------------------------------------------------------------------------------------

    def check_admission_policies(self) -> None:
        """Clusters without Kueue that serve admissionregistration.k8s.io/v1 (kubernetes/api v0.35.0
        `admissionregistration/v1/types.go`): each team namespace holding GPU workloads has a ValidatingAdmissionPolicy
        whose CEL parses (minimally: closed strings, balanced brackets, known roots, variables defined before use),
        which matches pod creation in that namespace, and whose inline approvals admit the set's own GPU pods; and a
        binding that names it, matches the namespace and denies (validationActions [Deny])."""
        policies = {p["metadata"]["name"]: p for p in self.by_kind.get("ValidatingAdmissionPolicy", [])}
        bindings = self.by_kind.get("ValidatingAdmissionPolicyBinding", [])
        for obj in (*policies.values(), *bindings):
            self.examined(obj)
        for policy in policies.values():
            self._check_policy_cel(policy)
        covered: dict[str, dict] = {}  # namespace -> policy of a well-formed binding
        for binding in bindings:
            spec = binding["spec"]
            policy = policies.get(spec.get("policyName"))
            if policy is None:
                self.problem("admission-policy", binding, f"it names policy {spec.get('policyName')!r}, which the set "
                                                          "lacks: nothing is enforced.")  # fmt: skip
                continue
            if spec.get("validationActions") != ["Deny"]:
                self.problem("admission-policy", binding, f"its validationActions are {spec.get('validationActions')}, "
                                                          "not [Deny]: a refused pod is still created.")  # fmt: skip
                continue
            namespace = _selected_namespace((spec.get("matchResources") or {}).get("namespaceSelector"))
            policy_namespace = _selected_namespace((policy["spec"].get("matchConstraints") or {}).get("namespaceSelector"))
            if namespace is None or namespace != policy_namespace:
                self.problem("admission-policy", binding, f"it matches namespace {namespace!r} but its policy matches "
                                                          f"{policy_namespace!r}.")  # fmt: skip
                continue
            rules = (policy["spec"].get("matchConstraints") or {}).get("resourceRules") or []
            if not any("pods" in r.get("resources", []) and "CREATE" in r.get("operations", []) for r in rules):
                self.problem("admission-policy", policy, "it does not match pod creation.")
                continue
            covered[namespace] = policy
        if not self.inventory.admission_policies:
            return
        for pods in self.workloads():
            if not holds_gpus(pods.template):
                continue
            namespace = pods.workload["metadata"].get("namespace")
            if namespace not in covered:
                self.problem("admission-policy", pods.workload,
                             f"no ValidatingAdmissionPolicy bound with Deny guards namespace {namespace}: a GPU pod "
                             "copying this request's labels would be admitted.")  # fmt: skip
                continue
            self._check_admits(covered[namespace], pods)

    def _check_policy_cel(self, policy: dict) -> None:
        spec = policy["spec"]
        defined: set[str] = set()
        expressions = [(f"matchConditions[{c.get('name')}]", c.get("expression", "")) for c in
                       spec.get("matchConditions") or []]
        for variable in spec.get("variables") or []:
            expressions.append((f"variables.{variable['name']}", variable["expression"]))
        expressions += [(f"validations[{i}]", v.get("expression", "")) for i, v in enumerate(spec.get("validations") or [])]
        expressions += [(f"validations[{i}].messageExpression", v["messageExpression"])
                        for i, v in enumerate(spec.get("validations") or []) if v.get("messageExpression")]
        if not spec.get("validations"):
            self.problem("admission-policy", policy, "it has no validations: it refuses nothing.")
        for where, expression in expressions:
            error = cel_syntax_error(expression, variables=defined, params=bool(spec.get("paramKind")))
            if error:
                self.problem("admission-policy", policy, f"{where}: {error}")
            if where.startswith("variables."):
                defined.add(where.removeprefix("variables."))

    def _check_admits(self, policy: dict, pods: PodSet) -> None:
        """The policy's own approvals admit the set's pods: its request id, owner and per-pod GPUs (the rules of
        provisioning/manifests/admission_policy.py, read back from the inline constants)."""
        constants = {v["name"]: v["expression"] for v in policy["spec"].get("variables") or []}
        try:
            owners, limits, claims = (ast.literal_eval(constants[k]) for k in ("owners", "limits", "claims"))
        except (KeyError, ValueError, SyntaxError) as exc:
            self.problem("admission-policy", policy, f"its approvals are not literal constants ({exc}).")
            return
        labels = (pods.template.get("metadata") or {}).get("labels") or {}
        rid = next((v for k, v in labels.items() if k.endswith("/request-id")), "")
        owner = owners.get(rid)
        workload, kind, name = pods.workload, pods.workload["kind"], pods.workload["metadata"]["name"]
        expected = {"Job": f"Job/{name}", "JobSet": f"Job/{name}-workers-0", "Deployment": f"ReplicaSet/{name}-"}.get(kind)
        if expected is None:  # a bare Pod or a StatefulSet: nothing the portal renders, no owner to compare
            self.problem("admission-policy", workload, f"the policy admits GPU pods of Jobs, JobSets and Deployments "
                                                       f"only, not of a {kind}: they would be refused.")  # fmt: skip
            return
        if owner != expected:
            self.problem("admission-policy", workload, f"the policy approves owner {owner!r} for request {rid!r}, but "
                                                       f"its pods are owned by {expected!r}: they would be refused.")
            return
        for container in pods.template["spec"].get("containers", []):
            for resource, amount in ((container.get("resources") or {}).get("limits") or {}).items():
                allowed = limits.get(f"{rid}|{resource}")
                if resource.startswith("nvidia.com/") and (allowed is None or int(amount) > allowed):
                    self.problem("admission-policy", workload, f"its pods ask {amount} {resource}; the policy admits "
                                                               f"{allowed}: they would be refused.")  # fmt: skip
        for claim in pods.template["spec"].get("resourceClaims") or []:
            if f"{rid}|{claim.get('resourceClaimTemplateName')}" not in claims:
                self.problem("admission-policy", workload, f"its pods' claim {claim.get('name')} is not one the policy "
                                                           "admits: they would be refused.")  # fmt: skip


def _selected_namespace(selector: dict | None) -> str | None:
    labels = (selector or {}).get("matchLabels") or {}
    return labels.get(NAMESPACE_NAME_LABEL) if len(labels) == 1 and not (selector or {}).get("matchExpressions") else None

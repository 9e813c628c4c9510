"""The portal's Kubernetes permissions, declared once, and the check that they are exactly what the code uses.

`RULES` is the single declaration: each rule says which code path needs it. From it come
- the Helm chart's ClusterRole (`deploy/helm/gpu-portal/templates/clusterrole.yaml`), and
- the plain manifest for clusters the portal manages from outside (`deploy/kubernetes/target-cluster-rbac.yaml`),
both written by `python -m deploy.rbac --write` and kept in step by a test.

`check(calls)` takes HTTP calls recorded against a Kubernetes API server -- `(method, path)` or
`(method, path, content_type)` -- turns each into the authorization attributes the API server would check
(`request_attributes`, a port of k8s.io/apiserver's RequestInfoFactory) and reports the calls the rules deny and
the granted (group, resource, verb) triples no call used. Least privilege means both lists are empty.

Plain Python (no Django), so the chart can be rendered and checked without settings.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from deploy.request_info import Attributes, request_attributes

ROOT = Path(__file__).resolve().parent.parent
CHART_CLUSTERROLE = ROOT / "deploy" / "helm" / "gpu-portal" / "templates" / "clusterrole.yaml"
TARGET_CLUSTER_RBAC = ROOT / "deploy" / "kubernetes" / "target-cluster-rbac.yaml"

APPLY_PATCH_TYPES = {"application/apply-patch+yaml", "application/apply-patch+cbor"}


@dataclass(frozen=True)
class Rule:
    why: str
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    def as_k8s(self) -> dict:
        if self.non_resource_urls:
            return {"nonResourceURLs": list(self.non_resource_urls), "verbs": list(self.verbs)}
        return {"apiGroups": list(self.api_groups), "resources": list(self.resources), "verbs": list(self.verbs)}


# Objects rendered per request (provisioning/manifests): applied with server-side apply (PATCH; the API server
# also authorizes `create` when the object does not exist yet) and removed on cancel by listing them by the
# portal's labels and deleting each with a uid precondition (so an object recreated meanwhile is never removed).
APPLY = ("create", "patch")
APPLY_AND_TEAR_DOWN = ("create", "patch", "list", "delete")

RULES: tuple[Rule, ...] = (
    Rule("Inventory: list nodes (labels, allocatable, unschedulable) and read one node.",
         ("get", "list"), ("",), ("nodes",)),
    Rule("MIG planner sets the nvidia.com/mig.config label; cordon and uncordon patch spec.unschedulable.",
         ("patch",), ("",), ("nodes",)),
    Rule("Metering and gang progress: list and watch pods carrying the portal's labels, in every namespace.",
         ("list", "watch"), ("",), ("pods",)),
    Rule("DRA inventory: the devices the NVIDIA DRA driver publishes as ResourceSlices.",
         ("list",), ("resource.k8s.io",), ("resourceslices",)),
    Rule("DRA inventory and billing: which devices allocated ResourceClaims hold, to count used GPUs per node and "
         "bill the portal's pods for what their claims got.",
         ("list",), ("resource.k8s.io",), ("resourceclaims",)),
    Rule("Billing: DeviceTaintRules that mark devices unhealthy, so a run that failed on one is credited.",
         ("list",), ("resource.k8s.io",), ("devicetaintrules",)),
    Rule("DRA inventory: DeviceClasses, for the extended resources they serve (DRAExtendedResource).",
         ("list",), ("resource.k8s.io",), ("deviceclasses",)),
    Rule("Each team's namespace and quota, applied before its workloads (kept on cancel: other requests live there).",
         APPLY, ("",), ("namespaces", "resourcequotas")),
    Rule("Each team namespace's NetworkPolicies (default-deny ingress; ingress controller and metrics scraper "
         "admitted), applied with the namespace and kept on cancel.",
         APPLY, ("networking.k8s.io",), ("networkpolicies",)),
    Rule("Clusters without Kueue: each team namespace's ValidatingAdmissionPolicy and binding refusing GPU pods the "
         "portal did not approve (cluster-scoped, applied with the namespace, kept on cancel; docs/admission-check.md).",
         APPLY, ("admissionregistration.k8s.io",), ("validatingadmissionpolicies", "validatingadmissionpolicybindings")),
    Rule("Per-request Services, applied and torn down on cancel.",
         APPLY_AND_TEAR_DOWN, ("",), ("services",)),
    Rule("Inference and development workloads.",
         APPLY_AND_TEAR_DOWN, ("apps",), ("deployments",)),
    Rule("Metering: the ReplicaSets between a Deployment the portal applied and its pods, listed by the portal's "
         "labels, to follow a pod's owner chain by UID (docs/chargeback.md).",
         ("list",), ("apps",), ("replicasets",)),
    Rule("Training workloads; read one Job for its uid, which its gang objects name as their owner. Metering lists "
         "the Jobs a JobSet made to follow its pods' owner chain.",
         (*APPLY_AND_TEAR_DOWN, "get"), ("batch",), ("jobs",)),
    Rule("Multi-pod training on clusters with JobSet (a failed rank restarts the whole gang); read one for its uid.",
         (*APPLY_AND_TEAR_DOWN, "get"), ("jobset.x-k8s.io",), ("jobsets",)),
    Rule("Disruption budgets of served workloads.",
         APPLY_AND_TEAR_DOWN, ("policy",), ("poddisruptionbudgets",)),
    Rule("GPU claim templates on DRA clusters (resource.k8s.io/v1); pods' claims are made from them by Kubernetes.",
         APPLY_AND_TEAR_DOWN, ("resource.k8s.io",), ("resourceclaimtemplates",)),
    Rule("Native gang scheduling: Workload and PodGroup (scheduling.k8s.io v1alpha1, v1alpha2, v1beta1).",
         APPLY_AND_TEAR_DOWN, ("scheduling.k8s.io",), ("workloads", "podgroups")),
    Rule("Volcano gangs.",
         APPLY_AND_TEAR_DOWN, ("scheduling.volcano.sh",), ("podgroups",)),
    Rule("KAI Scheduler gangs.",
         APPLY_AND_TEAR_DOWN, ("scheduling.run.ai",), ("podgroups",)),
    Rule("Volcano queue of each team (cluster-scoped, kept on cancel).",
         APPLY, ("scheduling.volcano.sh",), ("queues",)),
    Rule("KAI Scheduler queue of each team (cluster-scoped, kept on cancel).",
         APPLY, ("scheduling.run.ai",), ("queues",)),
    Rule("Kueue LocalQueue of each team namespace (kept on cancel).",
         APPLY, ("kueue.x-k8s.io",), ("localqueues",)),
    Rule("The policy's priority tiers (docs/preemption.md): PriorityClasses, cluster-scoped, kept on cancel.",
         APPLY, ("scheduling.k8s.io",), ("priorityclasses",)),
    Rule("The policy's priority tiers for Kueue: WorkloadPriorityClasses, cluster-scoped, kept on cancel.",
         APPLY, ("kueue.x-k8s.io",), ("workloadpriorityclasses",)),
    Rule("Kueue admission check (provisioning/admission.py): the portal's AdmissionCheck gpu-portal-approval, "
         "server-side applied, read back for its generation.",
         (*APPLY, "get"), ("kueue.x-k8s.io",), ("admissionchecks",)),
    Rule("Kueue admission check: the admissionChecksStrategy field of the team ClusterQueue (server-side apply of "
         "that field only; the platform's quota stays its own), read first: a queue the platform has not made is "
         "never created.",
         (*APPLY, "get"), ("kueue.x-k8s.io",), ("clusterqueues",)),
    Rule("Kueue admission check: list and watch Workloads in every namespace.",
         ("list", "watch"), ("kueue.x-k8s.io",), ("workloads",)),
    Rule("Why queued requests wait (provisioning/queue_waits.py): the ClusterQueues' GPU quota.",
         ("list",), ("kueue.x-k8s.io",), ("clusterqueues",)),
    Rule("Why queued requests wait: each ClusterQueue's pending workloads in Kueue's order (its visibility API).",
         ("get",), ("visibility.kueue.x-k8s.io",), ("clusterqueues/pendingworkloads",)),
    Rule("Kueue admission check: the check's Active condition and the portal's entry in Workloads' "
         "status.admissionChecks (merge patch of the status subresource).",
         ("patch",), ("kueue.x-k8s.io",), ("admissionchecks/status", "workloads/status")),
    Rule("Discovery: server version and which API groups and versions are served (CRDs installed: Volcano, "
         "KAI, Kueue; scheduling.k8s.io version), as the dynamic client asks for them (RBAC matches these paths "
         "exactly). Also granted to every authenticated user by the built-in system:discovery role; declared so "
         "the portal's role stands alone.",
         ("get",), non_resource_urls=("/api/*", "/apis", "/apis/*", "/version")),
)


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    content_type: str | None = None

    @classmethod
    def of(cls, call: Call | Sequence[str]) -> Call:
        return call if isinstance(call, Call) else cls(*call)

    def required(self) -> list[Attributes]:
        """The authorization checks this call triggers. A server-side apply may create the object, for which the
        API server also authorizes `create` on the same resource."""
        attrs = request_attributes(self.method, self.url)
        checks = [attrs]
        if attrs.is_resource and attrs.verb == "patch" and (self.content_type or "").split(";")[0] in APPLY_PATCH_TYPES:
            checks.append(Attributes(**{**attrs.__dict__, "verb": "create"}))
        return checks


# --- matching (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac) --------------------------------------------------


def _matches(values: Iterable[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def _resource_matches(resources: Iterable[str], attrs: Attributes) -> bool:
    key = attrs.resource_key
    for item in resources:
        if item in ("*", key):
            return True
        if attrs.subresource and item == f"*/{attrs.subresource}":
            return True
        if item == f"{attrs.resource}/*" and attrs.subresource:
            return True
    return False


def _url_matches(patterns: Iterable[str], path: str) -> bool:
    return any(p == "*" or p == path or (p.endswith("*") and path.startswith(p[:-1])) for p in patterns)


def rule_allows(rule: Rule, attrs: Attributes) -> bool:
    if not _matches(rule.verbs, attrs.verb):
        return False
    if attrs.is_resource:
        return (bool(rule.resources) and _matches(rule.api_groups, attrs.api_group)
                and _resource_matches(rule.resources, attrs))
    return bool(rule.non_resource_urls) and _url_matches(rule.non_resource_urls, attrs.path)


def grants(rules: Sequence[Rule]) -> set[tuple]:
    """Every (group, resource, verb) or (url, verb) a rule set grants."""
    result = set()
    for rule in rules:
        for verb in rule.verbs:
            if rule.non_resource_urls:
                result.update(("url", url, verb) for url in rule.non_resource_urls)
            else:
                result.update((group, resource, verb) for group in rule.api_groups for resource in rule.resources)
    return result


@dataclass
class CheckResult:
    denied: list[tuple[Call, Attributes]] = field(default_factory=list)
    unused: list[tuple] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.denied and not self.unused

    def explain(self) -> str:
        lines = [f"denied: {c.method} {c.url} -> {a.verb} {a.api_group or 'core'}/{a.resource_key or a.path}"
                 for c, a in self.denied]
        lines += [f"granted but unused: {' '.join(g or 'core' for g in grant)}" for grant in self.unused]
        return "\n".join(lines)


def check(calls: Iterable[Call | Sequence[str]], rules: Sequence[Rule] = RULES) -> CheckResult:
    result = CheckResult()
    used = set()
    for call in map(Call.of, calls):
        for attrs in call.required():
            allowed = False
            for rule in rules:
                if rule_allows(rule, attrs):
                    allowed = True
                    if attrs.is_resource:
                        used.add((attrs.api_group, attrs.resource_key, attrs.verb))
                    else:
                        used.update(("url", url, attrs.verb) for url in rule.non_resource_urls
                                    if _url_matches([url], attrs.path))
            if not allowed:
                result.denied.append((call, attrs))
    result.unused = sorted(grants(rules) - used)
    return result


def assert_least_privilege(calls: Iterable[Call | Sequence[str]], rules: Sequence[Rule] = RULES) -> None:
    """For tests: every recorded call is allowed, and every granted permission was used by some call."""
    result = check(calls, rules)
    assert result.ok, "RBAC rules and API calls disagree:\n" + result.explain()


# --- rendering ----------------------------------------------------------------------------------------------------

HEADER = "# Generated by `python -m deploy.rbac --write` from deploy/rbac.py (RULES). Do not edit by hand.\n"


def _rules_yaml(rules: Sequence[Rule], indent: str = "  ") -> str:
    lines = []
    for rule in rules:
        lines.append(f"{indent}# {rule.why}")
        dumped = yaml.safe_dump([rule.as_k8s()], default_flow_style=None, sort_keys=False, width=200)
        lines.extend(indent + line for line in dumped.rstrip("\n").splitlines())
    return "\n".join(lines) + "\n"


def render_chart_clusterrole(rules: Sequence[Rule] = RULES) -> str:
    return (
        HEADER
        + "{{- if .Values.rbac.create }}\n"
        + "apiVersion: rbac.authorization.k8s.io/v1\n"
        + "kind: ClusterRole\n"
        + "metadata:\n"
        + "  name: {{ .Release.Name }}-gpu-portal\n"
        + "  labels:\n"
        + "    app.kubernetes.io/name: gpu-portal\n"
        + "    app.kubernetes.io/instance: {{ .Release.Name }}\n"
        + "    app.kubernetes.io/managed-by: {{ .Release.Service }}\n"
        + "    helm.sh/chart: gpu-portal-{{ .Chart.Version }}\n"
        + "rules:\n"
        + _rules_yaml(rules)
        + "{{- end }}\n"
    )


def render_target_cluster_rbac(rules: Sequence[Rule] = RULES) -> str:
    """For a cluster the portal manages from outside: a ServiceAccount with these rules and a token Secret whose
    token and CA go into the cluster's credentials in the portal's admin."""
    return (
        HEADER
        + "# kubectl apply -f target-cluster-rbac.yaml on the managed cluster, then copy the token and CA of the\n"
        + "# Secret gpu-portal/gpu-portal-token into the cluster's credentials in the portal admin.\n"
        + yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-portal"}},
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": "gpu-portal", "namespace": "gpu-portal"}},
            {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
             "metadata": {"name": "gpu-portal-token", "namespace": "gpu-portal",
                          "annotations": {"kubernetes.io/service-account.name": "gpu-portal"}}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "gpu-portal"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-portal"},
             "subjects": [{"kind": "ServiceAccount", "name": "gpu-portal", "namespace": "gpu-portal"}]},
        ], sort_keys=False)
        + "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: gpu-portal\nrules:\n"
        + _rules_yaml(rules)
    )


def rules_table(rules: Sequence[Rule] = RULES) -> str:
    """The rules as a Markdown table, for docs/rbac.md."""
    lines = ["| API group | resources | verbs | why |", "|---|---|---|---|"]
    for rule in rules:
        if rule.non_resource_urls:
            target = ("(non-resource)", ", ".join(f"`{u}`" for u in rule.non_resource_urls))
        else:
            target = (", ".join(f"`{g}`" if g else "core" for g in rule.api_groups),
                      ", ".join(f"`{r}`" for r in rule.resources))
        lines.append(f"| {target[0]} | {target[1]} | {', '.join(rule.verbs)} | {rule.why} |")
    return "\n".join(lines)


GENERATED = {CHART_CLUSTERROLE: render_chart_clusterrole, TARGET_CLUSTER_RBAC: render_target_cluster_rbac}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the generated manifests")
    parser.add_argument("--table", action="store_true", help="print the rules as a Markdown table")
    args = parser.parse_args(argv)
    if args.table:
        print(rules_table())
        return 0
    for target, render in GENERATED.items():
        if args.write:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render())
            print(f"wrote {target.relative_to(ROOT)}")
        else:
            sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

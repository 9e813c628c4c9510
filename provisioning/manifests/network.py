"""Network isolation of a team namespace: `networking.k8s.io/v1` NetworkPolicies (ingress only).

MIG and fabric isolation keep teams apart on the GPU; without a policy any pod in the cluster could still reach
a team's rendezvous port (29500) or its inference Service. Per team namespace:

- `default-deny-ingress`, selecting every pod: ingress is allowed only from pods of the same namespace (the
  gang's rendezvous, a notebook calling the team's own model) and, when the cluster declares one, from the
  metrics scraper (every port: the team's image picks its metrics port, e.g. vLLM's 8000, Triton's 8002).
- `allow-ingress-controller`, only when the cluster declares its ingress controller: the controller's pods may
  reach the HTTP port of the team's inference pods, nothing else.

A peer is a namespace (matched by the `kubernetes.io/metadata.name` label the API server sets on every
namespace) and optional pod labels in it. NetworkPolicies add up: a pod selected by any policy accepts the
union of their rules. Egress is left open (DNS, image pulls, object storage, the NCCL fabric).
Semantics: https://kubernetes.io/docs/concepts/services-networking/network-policies/ (networking.k8s.io/v1).
"""

from __future__ import annotations

import re

from gpu.vocabulary import INFERENCE

from ..contract import WORKLOAD_CLASS, domain_key
from .errors import RenderError
from .labels import team_labels
from .names import DNS_1123_LABEL, LABEL_VALUE
from .spec import ClusterProfile, NetworkPeer, TeamSpec
from .workloads import HTTP_PORT

DEFAULT_DENY_NAME = "default-deny-ingress"
INGRESS_CONTROLLER_NAME = "allow-ingress-controller"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace (1.22+)

_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


def namespace_problems(namespace: str) -> list[str]:
    if namespace and (len(namespace) > 63 or not DNS_1123_LABEL.match(namespace)):
        return [f"{namespace!r} is not a namespace name (a DNS-1123 label: lower case, digits and '-')."]
    return []


def pod_label_problems(pod_labels: object) -> list[str]:
    if not isinstance(pod_labels, dict):
        return ["Pod labels must be a mapping of label keys to values."]
    problems = []
    for key, value in pod_labels.items():
        prefix, _, name = str(key).rpartition("/")
        if (not re.fullmatch(_LABEL_NAME, name) or len(name) > 63
                or (prefix and (len(prefix) > 253 or not re.fullmatch(_LABEL_PREFIX, prefix)))):
            problems.append(f"{key!r} is not a label key.")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            problems.append(f"The value of {key!r} ({value!r}) is not a label value.")
    return problems


def peer_problems(namespace: str, pod_labels: object) -> list[str]:
    """What is wrong with a declared peer (empty when it is usable or not declared at all)."""
    problems = namespace_problems(namespace) + pod_label_problems(pod_labels)
    if pod_labels and not namespace:
        problems.append("Pod labels need the namespace those pods run in.")
    return problems


def _peer(peer: NetworkPeer, what: str) -> dict:
    problems = peer_problems(peer.namespace, peer.pod_labels)
    if not peer.namespace:
        problems.append("A peer needs a namespace.")
    if problems:
        raise RenderError(f"The cluster's {what} is not usable in a NetworkPolicy: {' '.join(problems)}")
    # namespaceSelector and podSelector in one peer: pods with these labels *in* that namespace (AND).
    return {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: peer.namespace}},
        "podSelector": {"matchLabels": dict(sorted(peer.pod_labels.items()))},
    }


def _metadata(name: str, team: TeamSpec, cluster: ClusterProfile, namespace: str) -> dict:
    return {"name": name, "namespace": namespace, "labels": team_labels(team.slug, cluster)}


def build_default_deny_ingress(team: TeamSpec, cluster: ClusterProfile, namespace: str) -> dict:
    sources = [{"podSelector": {}}]  # any pod of this namespace (an empty podSelector without namespaceSelector)
    if cluster.metrics_scraper:
        sources.append(_peer(cluster.metrics_scraper, "metrics scraper"))
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(DEFAULT_DENY_NAME, team, cluster, namespace),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": sources}]},
    }


def build_ingress_controller_policy(team: TeamSpec, cluster: ClusterProfile, namespace: str) -> dict | None:
    if not cluster.ingress_controller:
        return None
    inference_pods = {domain_key(cluster.label_domain, WORKLOAD_CLASS): INFERENCE}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(INGRESS_CONTROLLER_NAME, team, cluster, namespace),
        "spec": {
            "podSelector": {"matchLabels": inference_pods},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [_peer(cluster.ingress_controller, "ingress controller")],
                    "ports": [{"protocol": "TCP", "port": HTTP_PORT}],
                }
            ],
        },
    }


def build_network_policies(team: TeamSpec, cluster: ClusterProfile, namespace: str) -> list[dict]:
    policies = [build_default_deny_ingress(team, cluster, namespace)]
    ingress = build_ingress_controller_policy(team, cluster, namespace)
    if ingress:
        policies.append(ingress)
    return policies

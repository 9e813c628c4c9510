"""Where a pod can land: required node selection and taints, with the Kubernetes scheduler's semantics."""

from __future__ import annotations

from .model import UNSCHEDULABLE_TAINT

# node selection (component-helpers nodeaffinity semantics) ---------------------------------------------------


def _expression_matches(expression: dict, labels: dict[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        try:
            node_value, bound = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False  # a missing or non-integer label never satisfies Gt/Lt
        return node_value > bound if operator == "Gt" else node_value < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def _field_matches(expression: dict, node: dict) -> bool:
    # matchFields supports metadata.name only.
    return _expression_matches(expression, {"metadata.name": node["metadata"]["name"]})


def _term_matches(term: dict, node: dict) -> bool:
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    labels = node["metadata"].get("labels", {})
    return all(_expression_matches(e, labels) for e in expressions) and all(_field_matches(f, node) for f in fields)


def node_matches(pod: dict, node: dict) -> bool:
    labels = node["metadata"].get("labels", {})
    if any(labels.get(key) != value for key, value in (pod.get("nodeSelector") or {}).items()):
        return False
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return True
    return any(_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def unmet_requirements(pod: dict, nodes: tuple[dict, ...]) -> list[str]:
    """The single requirements no node meets, for the message."""
    unmet = []
    for key, value in (pod.get("nodeSelector") or {}).items():
        if not any(n["metadata"].get("labels", {}).get(key) == value for n in nodes):
            unmet.append(f"{key}={value}")
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            if not any(_expression_matches(expression, n["metadata"].get("labels", {})) for n in nodes):
                unmet.append(f"{expression['key']} {expression['operator']} {expression.get('values') or ''}".strip())
    return unmet


# taints and tolerations (k8s.io/api core/v1 toleration.go) -------------------------------------------------


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration["key"] != taint["key"]:
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def node_taints(node: dict) -> list[dict]:
    taints = [t for t in node.get("spec", {}).get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]
    if node.get("spec", {}).get("unschedulable") and not any(t["key"] == UNSCHEDULABLE_TAINT["key"] for t in taints):
        taints.append(UNSCHEDULABLE_TAINT)
    return taints


def untolerated(pod: dict, node: dict) -> list[dict]:
    tolerations = pod.get("tolerations") or []
    return [t for t in node_taints(node) if not any(_tolerates(tol, t) for tol in tolerations)]


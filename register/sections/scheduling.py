"""2. Scheduling model per cluster and pool: device plugin or DRA as declared and as the nodes show it, conflicts,
whether the cluster's Kubernetes offers `DRAExtendedResource`, what a cluster with DRA pools must be configured with
(Kueue's deviceClassMappings, the NVIDIA driver's gates, DeviceClasses serving extended resources), and what moving a device-plugin pool to DRA would
change for the requests living there (re-rendered by the pure renderer, compared object by object, and the new
objects validated offline; nothing is written)."""
from __future__ import annotations

import copy
import dataclasses
import re
from collections import Counter
from typing import Any

from gpu.catalogue import load_catalogue
from gpu.vocabulary import BOTH, DEVICE_PLUGIN, DRA
from provisioning.manifests import ManifestInvalid, RenderError, render, render_team, validate_objects
from provisioning.manifests.clusterside import dra_requirements
from provisioning.selectors import cluster_profile, request_spec, team_spec

from ..choices import DecisionArea, Section, Verdict
from .common import (
    Item,
    SectionResult,
    Snapshot,
    capitalised,
    decision_evidence,
    decision_fields,
    draft_note,
    plural,
)

AREA = Section.SCHEDULING_MODEL
MODEL_WORDS = {DEVICE_PLUGIN: "device plugin", DRA: "DRA", BOTH: "both device plugin and DRA"}

# KEP-5004 DRAExtendedResource by Kubernetes minor (reference §4.6): pods asking `nvidia.com/gpu` served from DRA.
DRA_EXTENDED_RESOURCE = {
    34: {"stage": "alpha", "on_by_default": False},
    35: {"stage": "alpha", "on_by_default": False},
    36: {"stage": "beta", "on_by_default": True},
    37: {"stage": "GA", "on_by_default": True},
}
_MINOR = re.compile(r"^v?1\.(\d+)")


def kubernetes_minor(version: str) -> int | None:
    match = _MINOR.match(version or "")
    return int(match[1]) if match else None


def dra_extended_resource(version: str) -> dict[str, Any]:
    minor = kubernetes_minor(version)
    gate = DRA_EXTENDED_RESOURCE.get(minor)
    if gate is None:
        return {"kubernetes_version": version, "stage": None, "on_by_default": False,
                "text": f"Kubernetes {version or 'unknown'}: DRAExtendedResource is not known for this version."}
    text = {
        "alpha": "alpha, off by default: pods asking nvidia.com/gpu are not served from DRA devices unless the "
                 "DRAExtendedResource feature gate is enabled on the API server, controller manager, scheduler "
                 "and kubelets",
        "beta": "beta, on by default: a DeviceClass with extendedResourceName lets pods asking nvidia.com/gpu be "
                "served from DRA devices",
        "GA": "GA (always on): a DeviceClass with extendedResourceName lets pods asking nvidia.com/gpu be served "
              "from DRA devices",
    }[gate["stage"]]
    return {"kubernetes_version": f"1.{minor}", **gate, "text": f"Kubernetes 1.{minor}: DRAExtendedResource is {text}."}


def _path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key) else f"{parent}['{key}']"


def json_changes(before: Any, after: Any, path: str = "$") -> list[dict[str, Any]]:
    """Leaf-level differences between two JSON values: [{path, change: added|removed|changed, before, after}]."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(before.keys() | after.keys(), key=str):
            where = _path(path, str(key))
            if key not in after:
                found.append({"path": where, "change": "removed", "before": before[key], "after": None})
            elif key not in before:
                found.append({"path": where, "change": "added", "before": None, "after": after[key]})
            else:
                found += json_changes(before[key], after[key], where)
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [change for index, (a, b) in enumerate(zip(before, after))
                for change in json_changes(a, b, f"{path}[{index}]")]
    if before != after:
        return [{"path": path, "change": "changed", "before": before, "after": after}]
    return []


def _object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{meta['namespace'] + '/' if meta.get('namespace') else ''}{meta.get('name')}"


def objects_diff(before: list[dict], after: list[dict]) -> dict[str, Any]:
    """Objects added, removed and changed (with their leaf changes) between two renderings."""
    old = {_object_key(o): o for o in before}
    new = {_object_key(o): o for o in after}
    changed = []
    for key in old.keys() & new.keys():
        changes = json_changes(old[key], new[key])
        if changes:
            changed.append({"object": key, "changes": changes})
    return {
        "added": sorted(new.keys() - old.keys()),
        "removed": sorted(old.keys() - new.keys()),
        "changed": sorted(changed, key=lambda c: c["object"]),
    }


def _validation(objects: list[dict], version: str) -> dict[str, Any]:
    try:
        return {"valid": True, "objects": validate_objects(objects, version), "problems": []}
    except ManifestInvalid as exc:
        return {"valid": False, "objects": len(objects), "problems": [str(p) for p in exc.problems]}
    except RenderError as exc:  # a Kubernetes version the schemas do not cover
        return {"valid": False, "objects": len(objects), "problems": [str(exc)]}


def migration_preview(*, cluster, pool, requests, pools) -> dict[str, Any]:
    """Each live request of a device-plugin pool rendered as it is and with the pool switched to DRA, and the
    namespace objects of their teams (the ResourceQuota counts DRA devices instead of extended resources): the
    difference, and the DRA objects validated for the cluster's Kubernetes version. Pure: no database writes."""
    before_profile = cluster_profile(cluster=cluster, pool=pool)
    after_profile = dataclasses.replace(before_profile, scheduling_model=DRA)
    rows, teams = [], {}
    for gpu_request in requests:
        row = {"request_id": gpu_request.pk, "team": gpu_request.team.slug, "name": gpu_request.name,
               "status": gpu_request.status, "strategy": gpu_request.strategy}
        teams[gpu_request.team.slug] = gpu_request.team
        try:
            spec = request_spec(gpu_request=gpu_request)
            before, after = render(spec, before_profile), render(spec, after_profile)
        except RenderError as exc:
            rows.append({**row, "error": str(exc), "objects_before": 0, "objects_after": 0, "added": [],
                         "removed": [], "changed": [], "validation": None})
            continue
        rows.append({**row, "error": None, "objects_before": len(before), "objects_after": len(after),
                     **objects_diff(before, after), "validation": _validation(after, cluster.kubernetes_version)})
    # The team's quota follows each pool's model (DRA pools count devices per DeviceClass): the pool, switched.
    moved = copy.copy(pool)
    moved.scheduling_model = DRA
    after_pools = [moved if p.pk == pool.pk else p for p in pools]
    team_rows = []
    for slug, team in sorted(teams.items()):
        try:
            before = render_team(team_spec(team=team, cluster=cluster, pools=pools), before_profile)
            after = render_team(team_spec(team=team, cluster=cluster, pools=after_pools), after_profile)
        except RenderError as exc:
            team_rows.append({"team": slug, "error": str(exc), "added": [], "removed": [], "changed": [],
                              "validation": None})
            continue
        team_rows.append({"team": slug, "error": None, **objects_diff(before, after),
                          "validation": _validation(after, cluster.kubernetes_version)})
    return {"to": DRA, "kubernetes_version": cluster.kubernetes_version, "requests": rows, "teams": team_rows}


def _preview_notes(preview: dict) -> list[str]:
    rows = preview["requests"]
    if not rows:
        return ["Moving this pool to DRA changes nothing that runs now: no live request is placed on it."]
    added = Counter(key.split("/")[0] for row in rows for key in row["added"])
    changed = Counter(c["object"].split("/")[0] for row in rows for c in row["changed"])
    invalid = [row for row in rows + preview["teams"] if row["error"] or not (row["validation"] or {}).get("valid")]
    text = (f"Moving this pool to DRA re-renders {plural(len(rows), 'live request')}: "
            f"adds {', '.join(f'{n} {kind}' for kind, n in sorted(added.items())) or 'no object'}, "
            f"changes {', '.join(f'{n} {kind}' for kind, n in sorted(changed.items())) or 'no object'} "
            "(nvidia.com/* limits become a claim in spec.resourceClaims and resources.claims)")
    quotas = [t["team"] for t in preview["teams"] if t["changed"]]
    if quotas:
        text += f"; the namespace quota of {', '.join(quotas)} counts DRA devices instead of extended resources"
    if invalid:
        return [text + f"; {plural(len(invalid), 'rendering')} would not render or validate for DRA."]
    return [text + f"; every re-rendered object validates against Kubernetes {preview['kubernetes_version']}."]


def _nodes_by_model(nodes) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in nodes:
        found.setdefault(node.scheduling_model or "unknown", []).append(node.name)
    return dict(sorted(found.items()))


def _nodes_text(by_model: dict[str, list[str]], synced: bool) -> str:
    if not synced:
        return "never synced: no node seen"
    if not by_model:
        return "no node seen"
    return "nodes: " + ", ".join(f"{len(names)} {MODEL_WORDS.get(m, m)}" for m, names in by_model.items())


def _decision_conflicts(decision, configured: str, by_model: dict[str, list[str]]) -> list[str]:
    if decision is None or not decision.is_signed_off:
        return []
    found = []
    value = decision.decided_value
    signed = f"Signed off {MODEL_WORDS.get(value, value)} ({decision.signed_off_by_name}, " \
             f"{decision.signed_off_at:%Y-%m-%d})"
    if value != configured:
        found.append(f"{signed}, but it is set to {MODEL_WORDS.get(configured, configured)}.")
    seen = set(by_model) - {"unknown"}
    if seen and seen != {value}:
        found.append(f"{signed}, but the nodes report "
                     f"{', '.join(MODEL_WORDS.get(m, m) for m in sorted(seen))}.")
    return found


def _cluster_item(snapshot: Snapshot, cluster) -> Item:
    nodes = list(cluster.nodes.all())
    by_model = _nodes_by_model(nodes)
    declared = cluster.scheduling_model
    decision = snapshot.decision(DecisionArea.SCHEDULING_MODEL, cluster)
    conflicts = [d["message"] for d in cluster.discrepancies if d.get("field") == "scheduling_model"]
    if decision is not None and decision.is_signed_off and decision.decided_value != declared:
        conflicts += _decision_conflicts(decision, declared, {})
    gate = dra_extended_resource(cluster.kubernetes_version)
    synced = cluster.last_synced_at is not None
    verdict = Verdict.CONFLICT if conflicts else (
        Verdict.DECIDED if decision is not None and decision.is_signed_off else Verdict.INHERITED)
    notes = conflicts + draft_note(decision)
    if verdict == Verdict.INHERITED and not draft_note(decision):
        notes.insert(0, f"{capitalised(MODEL_WORDS[declared])} is the cluster's setting; nobody signed it off.")
    if not synced:
        notes.append(f"Not verified against the nodes: {cluster.name} was never synced.")
    notes.append(gate["text"])
    requirements = _dra_requirements(cluster)
    notes += [r["text"] for r in requirements]
    return Item(
        area=AREA, subject=cluster.name, state=f"{MODEL_WORDS[declared]} (cluster setting); "
                                               f"{_nodes_text(by_model, synced)}",
        verdict=verdict, **decision_fields(decision),
        evidence={
            "level": "cluster", "cluster": cluster.name, "declared": declared, "synced": synced,
            "kubernetes_version": cluster.kubernetes_version,
            "discovered_kubernetes_version": cluster.discovered_kubernetes_version or None,
            "dra_in_use": cluster.dra_in_use, "nodes_by_model": by_model, "dra_extended_resource": gate,
            "decision": decision_evidence(decision), "conflicts": conflicts, "dra_requirements": requirements,
        },
        notes=notes,
    )  # fmt: skip


def _dra_requirements(cluster) -> list[dict[str, Any]]:
    """What the cluster side must be configured with for its DRA pools' objects and its ComputeDomains' channel
    claims (manifests/clusterside.py)."""
    pools = list(cluster.pools.all())
    modes = [p.sharing_mode for p in pools if (p.scheduling_model or cluster.scheduling_model) == DRA]
    catalogue = load_catalogue()
    compute_domains = any(p.nvlink_domain and getattr(catalogue.models.get(p.gpu_model.key), "multinode_nvlink", False)
                          for p in pools)
    return dra_requirements(
        kubernetes_minor=kubernetes_minor(cluster.kubernetes_version), gang_scheduler=cluster.gang_scheduler,
        sharing_modes=modes, feature_gates=cluster.dra_feature_gates or (),
        extended_resources={c["name"]: c.get("extended_resource_name", "") for c in cluster.dra_device_classes or ()},
        compute_domains=compute_domains,
    )


def _pool_item(snapshot: Snapshot, cluster, pool, pools) -> Item:
    nodes = [n for n in cluster.nodes.all() if n.pool_id == pool.pk]
    by_model = _nodes_by_model(nodes)
    effective = pool.scheduling_model or cluster.scheduling_model
    setting = "pool setting" if pool.scheduling_model else "cluster setting"
    decision, scope = snapshot.decision_for_pool(DecisionArea.SCHEDULING_MODEL, cluster, pool)
    conflicts = []
    if BOTH in by_model:
        conflicts.append(f"On {', '.join(by_model[BOTH])} both the device plugin and the NVIDIA DRA GPU plugin "
                         "hand out the GPUs; they must not manage the same node.")
    if DEVICE_PLUGIN in by_model and DRA in by_model:
        conflicts.append(f"The pool's nodes mix the device plugin ({', '.join(by_model[DEVICE_PLUGIN])}) and DRA "
                         f"({', '.join(by_model[DRA])}).")
    seen = set(by_model) - {"unknown"}
    if len(seen) == 1 and seen != {effective} and BOTH not in seen:
        conflicts.append(f"Set to {MODEL_WORDS[effective]}, but its nodes use {MODEL_WORDS[next(iter(seen))]}.")
    if not conflicts:
        conflicts += [d["message"] for d in pool.discrepancies if d.get("field") == "scheduling_model"]
    conflicts += _decision_conflicts(decision, effective, by_model)
    synced = cluster.last_synced_at is not None
    verdict = Verdict.CONFLICT if conflicts else (
        Verdict.DECIDED if decision is not None and decision.is_signed_off else Verdict.INHERITED)
    notes = list(conflicts) + draft_note(decision)
    if verdict == Verdict.DECIDED and scope == "cluster":
        notes.append(f"Follows the decision signed off for the whole of {cluster.name}.")
    if verdict == Verdict.INHERITED and not draft_note(decision):
        notes.append(f"{capitalised(MODEL_WORDS[effective])} because that is the {setting}; nobody signed it off.")
    if not synced:
        notes.append(f"Not verified against the nodes: {cluster.name} was never synced.")
    preview = None
    if effective == DEVICE_PLUGIN:
        live = [r for r in snapshot.live_requests
                if r.decision.cluster == cluster.name and r.decision.node_pool == pool.name]
        preview = migration_preview(cluster=cluster, pool=pool, requests=live, pools=pools)
        notes += _preview_notes(preview)
        gate = dra_extended_resource(cluster.kubernetes_version)
        if gate["on_by_default"]:
            notes.append("With DRAExtendedResource on, pods that keep asking nvidia.com/gpu could also be served "
                         "from DRA devices through a DeviceClass with extendedResourceName, without re-rendering.")
    return Item(
        area=AREA, subject=f"{cluster.name}/{pool.name}",
        state=f"{MODEL_WORDS[effective]} ({setting}); {_nodes_text(by_model, synced)}",
        verdict=verdict, **decision_fields(decision),
        evidence={
            "level": "pool", "cluster": cluster.name, "pool": pool.name, "source": pool.source,
            "declared": effective, "declared_at": "pool" if pool.scheduling_model else "cluster", "synced": synced,
            "nodes_by_model": by_model, "decision": decision_evidence(decision, scope), "conflicts": conflicts,
            "discrepancies": [d for d in pool.discrepancies if d.get("field") == "scheduling_model"],
            "migration_preview": preview,
        },
        notes=notes,
    )  # fmt: skip


def build(snapshot: Snapshot) -> SectionResult:
    items = []
    for cluster in snapshot.clusters:
        pools = list(cluster.pools.all())
        items.append(_cluster_item(snapshot, cluster))
        items += [_pool_item(snapshot, cluster, pool, pools) for pool in pools]
    pools = [i for i in items if i.evidence["level"] == "pool"]
    summary = {
        "clusters": len(snapshot.clusters), "pools": len(pools),
        "pools_by_model": dict(Counter(i.evidence["declared"] for i in pools)),
        "pools_in_conflict": [i.subject for i in pools if i.verdict == Verdict.CONFLICT],
        "requests_previewed": sum(len((i.evidence["migration_preview"] or {}).get("requests", [])) for i in pools),
    }  # fmt: skip
    notes = [f"{plural(len(pools), 'pool')}: "
             + ", ".join(f"{n} {MODEL_WORDS.get(m, m)}" for m, n in sorted(summary["pools_by_model"].items()))
             + (f"; in conflict: {', '.join(summary['pools_in_conflict'])}" if summary["pools_in_conflict"] else "")
             + "."] if pools else []
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary, notes=notes)

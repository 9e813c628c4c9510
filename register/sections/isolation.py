"""4. Tenant isolation, from the inventory and the pods running now (`Node.gpu_pods` of the last sync): which teams
share time-sliced GPU nodes with which other teams; regulated workloads on time-slicing (must be none: the check
passes or names them, from the nodes and from the live requests' decisions); NVLink domains (`Node.clique`) with
pods of more than one tenant."""
from __future__ import annotations

import itertools
from typing import Any

from intake.decisions import STRATEGY_WORDS, Decision, Reason
from intake.models import GpuRequest

from ..choices import Section, Verdict
from .common import Item, SectionResult, Snapshot, plural

AREA = Section.TENANT_ISOLATION
TIME_SLICING, REGULATED = "time_slicing", "regulated"


def _requests_of_pods(snapshot: Snapshot) -> dict[int, GpuRequest]:
    """The requests the pods on the nodes belong to (any status: a pod may outlive what the portal knows). One
    query."""
    ids = {pod.get("request_id") for cluster in snapshot.clusters for node in cluster.nodes.all()
           for pod in node.gpu_pods or [] if pod.get("request_id")}
    live = {r.pk: r for r in snapshot.live_requests}
    missing = ids - live.keys()
    found = {r.pk: r for r in GpuRequest.objects.filter(pk__in=missing).select_related("team")} if missing else {}
    return {pk: request for pk, request in {**live, **found}.items() if pk in ids}


def _tenant(pod: dict, requests: dict[int, GpuRequest]) -> tuple[str, bool]:
    """Who the pod's GPUs belong to, and whether the portal knows the pod (it made it for a known request)."""
    request = requests.get(pod.get("request_id"))
    if request is not None:
        return request.team.slug, True
    if pod.get("team"):
        return pod["team"], False
    return f"namespace {pod.get('namespace', '?')}", False


def _pod_ref(cluster, node, pod: dict, request: GpuRequest | None, pools_by_id) -> dict[str, Any]:
    pool = pools_by_id.get(node.pool_id)
    return {
        "cluster": cluster.name, "node": node.name, "pool": pool.name if pool else None,
        "pod": f"{pod.get('namespace')}/{pod.get('name')}", "request_id": request.pk if request else None,
        "team": request.team.slug if request else (pod.get("team") or None),
        "name": request.name if request else None,
    }  # fmt: skip


def _time_sliced(node, pools_by_id) -> bool:
    pool = pools_by_id.get(node.pool_id)
    return node.sharing_mode == TIME_SLICING or (pool is not None and pool.sharing_mode == TIME_SLICING)


def _routes_to(snapshot: Snapshot, strategy: str) -> list:
    if snapshot.policy is None:
        return []
    return [r for r in snapshot.policy.rules.all() if r.kind == "route" and r.outcome.get("strategy") == strategy]


def _rules_fields(rules) -> dict[str, Any]:
    """owner / signed_off_by / signed_off_at / rationale of an item decided by these (signed-off) rules."""
    return {
        "owner": ", ".join(sorted({r.owner for r in rules})),
        "signed_off_by": ", ".join(sorted({r.signed_off_by for r in rules})),
        "signed_off_at": max(r.signed_off_at for r in rules),
        "rationale": " ".join(f"{r.key}: {r.rationale}" for r in rules),
    }


def _unsigned_fields() -> dict[str, Any]:
    return {"owner": None, "signed_off_by": None, "signed_off_at": None, "rationale": ""}


def _fabric_reason(decision: Decision) -> Reason | None:
    reasons = decision.reasons_for("fabric_isolation")
    return reasons[-1] if reasons else None


def _time_slicing_item(snapshot: Snapshot, cluster, requests, pools_by_id) -> Item | None:
    nodes = [n for n in cluster.nodes.all() if _time_sliced(n, pools_by_id)]
    declared = [p for p in cluster.pools.all() if p.sharing_mode == TIME_SLICING]
    if not nodes and not declared:
        return None
    synced = cluster.last_synced_at is not None
    pairs: dict[tuple[str, str], list[str]] = {}
    dedicated, misplaced, foreign, by_policy = [], [], set(), True
    for node in nodes:
        tenants = {}
        for pod in node.gpu_pods or []:
            tenant, known = _tenant(pod, requests)
            tenants.setdefault(tenant, []).append((pod, known))
            request = requests.get(pod.get("request_id")) if known else None
            if request is not None and request.decision.strategy != TIME_SLICING:
                misplaced.append({**_pod_ref(cluster, node, pod, request, pools_by_id),
                                  "decided": request.decision.strategy})
        if len(tenants) < 2:
            continue
        for a, b in itertools.combinations(sorted(tenants), 2):
            pairs.setdefault((a, b), []).append(node.name)
        for tenant, pods in tenants.items():
            for pod, known in pods:
                request = requests.get(pod.get("request_id"))
                if not known:
                    foreign.add(tenant)
                    continue
                if request.answers.get("tenancy") == "dedicated":
                    dedicated.append({**_pod_ref(cluster, node, pod, request, pools_by_id),
                                      "shares_with": sorted(t for t in tenants if t != tenant)})
                if not snapshot.rule_signed(request.decision.policy_version, request.decision.rule):
                    by_policy = False
    routes = _routes_to(snapshot, TIME_SLICING)
    signed_routes = [r for r in routes if r.signed_off_at and r.signed_off_by]
    conflicts = [f"#{m['request_id']} {m['team']}/{m['name']} was decided {STRATEGY_WORDS.get(m['decided'], m['decided'])}"
                 f" but runs on time-sliced node {m['node']}." for m in misplaced]
    conflicts += [f"#{d['request_id']} {d['team']}/{d['name']} asked for dedicated GPUs but shares time-sliced node "
                  f"{d['node']} with {', '.join(d['shares_with'])}." for d in dedicated]
    decided = signed_routes and len(signed_routes) == len(routes) and (not pairs or (by_policy and not foreign))
    verdict = Verdict.CONFLICT if conflicts else (Verdict.DECIDED if decided else Verdict.INHERITED)
    fields = _rules_fields(signed_routes) if signed_routes else _unsigned_fields()
    if not synced:
        state = "not observed: never synced (time-sliced pools declared: " \
                f"{', '.join(p.name for p in declared)})"
    elif pairs:
        state = "; ".join(f"{a} + {b} on {', '.join(names)}" for (a, b), names in sorted(pairs.items()))
    else:
        state = f"no time-sliced node is shared by two tenants ({plural(len(nodes), 'time-sliced node')})"
    notes = list(conflicts)
    if not synced:
        notes.append(f"{cluster.name} was never synced: which tenants share its time-sliced nodes is not known.")
    if foreign:
        notes.append(f"Pods the portal did not start share time-sliced nodes: {', '.join(sorted(foreign))}; nobody "
                     "decided they share GPU memory with other tenants.")
    if not routes:
        notes.append("No route of the policy in force picks time-slicing: whatever is time-sliced was not decided "
                     "by the policy.")
    elif verdict == Verdict.DECIDED:
        notes.append(f"Time-slicing (no memory or fault isolation between tenants) is what signed-off route(s) "
                     f"{', '.join(r.key for r in signed_routes)} decide.")
    elif pairs and not by_policy:
        notes.append("Some of these workloads were time-sliced without a signed-off rule deciding it.")
    return Item(
        area=AREA, subject=f"{cluster.name}: time-sliced GPUs", state=state, verdict=verdict, **fields,
        evidence={
            "check": "teams sharing time-sliced GPU nodes", "cluster": cluster.name, "observed": synced,
            "time_sliced_nodes": [n.name for n in nodes], "time_sliced_pools": [p.name for p in declared],
            "pairs": [{"teams": [a, b], "nodes": names} for (a, b), names in sorted(pairs.items())],
            "dedicated_requests_sharing": dedicated, "decided_otherwise": misplaced,
            "tenants_outside_the_portal": sorted(foreign),
            "routes": [r.key for r in routes], "conflicts": conflicts,
        },
        notes=notes,
    )  # fmt: skip


def _regulated_item(snapshot: Snapshot, requests, pools_by_id) -> Item:
    violations: dict[tuple, dict] = {}
    nodes_checked, not_synced = 0, []
    for cluster in snapshot.clusters:
        if cluster.last_synced_at is None:
            not_synced.append(cluster.name)
        for node in cluster.nodes.all():
            if not _time_sliced(node, pools_by_id):
                continue
            nodes_checked += 1
            for pod in node.gpu_pods or []:
                request = requests.get(pod.get("request_id"))
                if request is not None and request.answers.get("data_sensitivity") == REGULATED:
                    ref = _pod_ref(cluster, node, pod, request, pools_by_id)
                    violations[("node", ref["pod"], cluster.name)] = {**ref, "source": "node"}
    regulated_live = [r for r in snapshot.live_requests if r.answers.get("data_sensitivity") == REGULATED]
    for request in regulated_live:
        if request.decision.strategy == TIME_SLICING:
            violations[("decision", request.pk)] = {
                "cluster": request.decision.cluster, "node": None, "pool": request.decision.node_pool,
                "pod": None, "request_id": request.pk, "team": request.team.slug, "name": request.name,
                "source": "decision",
            }  # fmt: skip
    found = sorted(violations.values(), key=lambda v: (v["request_id"] or 0, v["source"], v["pod"] or ""))
    guardrails = [g for g in (snapshot.policy.rules.all() if snapshot.policy else [])
                  if g.kind == "guardrail" and TIME_SLICING in g.outcome.get("forbid_strategies", [])
                  and REGULATED in g.match.get("data_sensitivity", [REGULATED])]
    signed = [g for g in guardrails if g.signed_off_at and g.signed_off_by]
    verdict = Verdict.CONFLICT if found else (Verdict.DECIDED if signed else Verdict.INHERITED)
    if found:
        state = f"VIOLATION: {plural(len({v['request_id'] for v in found}), 'regulated workload')} on time-sliced GPUs"
        notes = [f"#{v['request_id']} {v['team']}/{v['name']} " + (
            f"has pod {v['pod']} on time-sliced node {v['cluster']}/{v['node']}" if v["source"] == "node"
            else f"was decided time-slicing on {v['cluster']}/{v['pool']}") + "." for v in found]
    else:
        state = "none (check passed)"
        notes = [f"No regulated workload on time-slicing: {plural(nodes_checked, 'time-sliced node')} checked for "
                 f"regulated pods, {plural(len(regulated_live), 'live regulated request')} checked for a time-slicing "
                 "decision."]
    if not_synced:
        notes.append(f"Never synced, so their nodes could not be checked: {', '.join(not_synced)} (decisions only).")
    if not guardrails:
        notes.append("No guardrail in force forbids time-slicing for regulated data: nothing decided it must not "
                     "happen.")
    return Item(
        area=AREA, subject="regulated workloads on time-slicing", state=state, verdict=verdict,
        **(_rules_fields(signed) if signed else _unsigned_fields()),
        evidence={
            "check": "regulated workloads on time-sliced GPUs must be none", "passed": not found,
            "violations": found, "time_sliced_nodes_checked": nodes_checked, "clusters_not_synced": not_synced,
            "regulated_live_requests_checked": len(regulated_live), "guardrails": [g.key for g in guardrails],
        },
        notes=notes,
    )  # fmt: skip


def _nvlink_item(snapshot: Snapshot, cluster, requests) -> Item | None:
    nodes = [n for n in cluster.nodes.all() if n.clique]
    declared = [p for p in cluster.pools.all() if p.nvlink_domain]
    if not nodes and not declared:
        return None
    synced = cluster.last_synced_at is not None
    domains: dict[str, dict[str, Any]] = {}
    for node in nodes:
        domain = domains.setdefault(node.clique, {"nodes": [], "tenants": set(), "requests": set(), "foreign": set()})
        domain["nodes"].append(node.name)
        for pod in node.gpu_pods or []:
            tenant, known = _tenant(pod, requests)
            domain["tenants"].add(tenant)
            (domain["requests"] if known else domain["foreign"]).add(pod.get("request_id") if known else tenant)
    shared = {c: d for c, d in domains.items() if len(d["tenants"]) > 1}
    violations, by_policy, workloads, fabric_rules = [], True, set(), set()
    for clique, domain in domains.items():
        for request_id in domain["requests"]:
            request = requests[request_id]
            workloads.add(request_id)
            reason = _fabric_reason(request.decision)
            if reason and reason.source == "policy" and snapshot.rule_signed(request.decision.policy_version,
                                                                             reason.rule):
                fabric_rules.add(reason.rule)
            else:
                by_policy = False
            if clique in shared and request.decision.fabric_isolation == "tenant_exclusive":
                others = sorted(t for t in domain["tenants"] if t != request.team.slug)
                violations.append({"request_id": request.pk, "team": request.team.slug, "name": request.name,
                                   "clique": clique, "shares_with": others})
    foreign = sorted({t for d in domains.values() for t in d["foreign"]})
    conflicts = [f"#{v['request_id']} {v['team']}/{v['name']} is tenant-exclusive but its NVLink domain {v['clique']} "
                 f"also runs {', '.join(v['shares_with'])}." for v in violations]
    decided = bool(workloads) and by_policy and not foreign
    rules = [r for r in (snapshot.policy.rules.all() if snapshot.policy else []) if r.key in fabric_rules]
    verdict = Verdict.CONFLICT if conflicts else (Verdict.DECIDED if decided and rules else Verdict.INHERITED)
    if not synced:
        state = f"not observed: never synced (NVLink domains declared on {', '.join(p.name for p in declared)})"
    elif shared:
        state = "; ".join(f"{c} shared by {', '.join(sorted(d['tenants']))}" for c, d in sorted(shared.items()))
    else:
        state = (f"no NVLink domain shared by more than one tenant ({plural(len(domains), 'domain')}, "
                 f"{plural(len(workloads) + len(foreign), 'workload')})")
    notes = list(conflicts)
    if not synced:
        notes.append(f"{cluster.name} was never synced: which tenants run on its NVLink domains is not known.")
    if synced and workloads and not by_policy:
        notes.append("The fabric isolation of the workloads on these domains came from the platform default "
                     "(shared), not from a signed-off rule.")
    if foreign:
        notes.append(f"Workloads the portal did not start run on NVLink domains: {', '.join(foreign)}.")
    if synced and not workloads and not foreign:
        notes.append("No workload holds GPUs on the NVLink domains now.")
    return Item(
        area=AREA, subject=f"{cluster.name}: NVLink domains", state=state, verdict=verdict,
        **(_rules_fields(rules) if verdict == Verdict.DECIDED else _unsigned_fields()),
        evidence={
            "check": "NVLink domains shared by more than one tenant", "cluster": cluster.name, "observed": synced,
            "domains": [{"clique": c, "nodes": d["nodes"], "tenants": sorted(d["tenants"]),
                         "shared": c in shared} for c, d in sorted(domains.items())],
            "declared_domains": {p.name: p.nvlink_domain for p in declared},
            "tenant_exclusive_requests_sharing": violations, "tenants_outside_the_portal": foreign,
            "conflicts": conflicts,
        },
        notes=notes,
    )  # fmt: skip


def build(snapshot: Snapshot) -> SectionResult:
    requests = _requests_of_pods(snapshot)
    pools_by_id = {p.pk: p for c in snapshot.clusters for p in c.pools.all()}
    items: list[Item] = []
    for cluster in snapshot.clusters:
        item = _time_slicing_item(snapshot, cluster, requests, pools_by_id)
        if item:
            items.append(item)
    items.append(_regulated_item(snapshot, requests, pools_by_id))
    for cluster in snapshot.clusters:
        item = _nvlink_item(snapshot, cluster, requests)
        if item:
            items.append(item)
    regulated = next(i for i in items if i.subject == "regulated workloads on time-slicing")
    pairs = sorted({tuple(p["teams"]) for i in items for p in i.evidence.get("pairs", [])})
    summary = {
        "regulated_on_time_slicing": len(regulated.evidence["violations"]),
        "check_passed": regulated.evidence["passed"],
        "team_pairs_sharing_time_sliced_nodes": [list(p) for p in pairs],
        "shared_nvlink_domains": sum(1 for i in items for d in i.evidence.get("domains", []) if d["shared"]),
    }
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary)

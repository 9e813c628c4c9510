"""5. Driver lifecycle per pool: the NVIDIA driver versions its nodes run (the declared one when never synced),
the live requests pinned to a driver floor, who owns the upgrades (a signed-off decision of the pool or of its
cluster; otherwise "nobody", inherited), the next planned upgrade and which requests it would strand
(`provisioning.selectors.driver_upgrade_impact`)."""
from __future__ import annotations

from collections import Counter

from provisioning.selectors import driver_upgrade_impact

from ..choices import DecisionArea, Section, Verdict
from .common import NOBODY, Item, SectionResult, Snapshot, decision_evidence, decision_fields, draft_note, plural

AREA = Section.DRIVER_LIFECYCLE


def _next_plan(snapshot: Snapshot, cluster, pool):
    """The earliest planned upgrade of the pool, or of its whole cluster."""
    plans = [p for p in snapshot.plans if p.cluster_id == cluster.pk and p.pool_id in (pool.pk, None)]
    return min(plans, key=lambda p: (p.planned_for, p.pool_id is None, p.pk), default=None)


def build(snapshot: Snapshot) -> SectionResult:
    today = snapshot.now.date()
    items = []
    for cluster in snapshot.clusters:
        for pool in cluster.pools.all():
            nodes = [n for n in cluster.nodes.all() if n.pool_id == pool.pk]
            if nodes:
                versions = dict(sorted(Counter(n.driver_version or "unknown" for n in nodes).items()))
                source = "nodes"
            else:
                versions = {pool.driver_version: pool.node_count} if pool.driver_version else {}
                source = "declared"
            pinned = [
                {"request_id": r.pk, "team": r.team.slug, "name": r.name, "status": r.status,
                 "min_driver_major": r.decision.driver.min_major}
                for r in snapshot.live_requests
                if r.decision.cluster == cluster.name and r.decision.node_pool == pool.name
                and r.decision.driver and r.decision.driver.min_major
            ]  # fmt: skip
            decision, scope = snapshot.decision_for_pool(DecisionArea.DRIVER_LIFECYCLE, cluster, pool)
            signed = decision is not None and decision.is_signed_off
            plan = _next_plan(snapshot, cluster, pool)
            impact = None
            if plan is not None:
                impact = driver_upgrade_impact(pool=pool, driver_version=plan.target_version,
                                               requests=snapshot.live_requests)
            conflicts = [d["message"] for d in pool.discrepancies if d.get("field") == "driver_version"]
            verdict = Verdict.CONFLICT if conflicts else (Verdict.DECIDED if signed else Verdict.INHERITED)
            fields = decision_fields(decision)
            if not signed:
                fields["owner"] = NOBODY
            shown = ", ".join(f"{v} on {plural(n, 'node')}" for v, n in versions.items()) or "unknown"
            state = f"{shown}{' (declared; no node seen)' if source == 'declared' else ''}; upgrades owned by " \
                    f"{fields['owner']}"
            notes = list(conflicts) + draft_note(decision)
            if not signed and not draft_note(decision):
                notes.append("Nobody owns this pool's driver upgrades: no signed-off decision names an owner.")
            elif signed and scope == "cluster":
                notes.append(f"{decision.owner} owns the driver upgrades of every pool of {cluster.name}.")
            if pinned:
                notes.append(f"{plural(len(pinned), 'live request')} pinned to a driver floor: "
                             + ", ".join(f"#{p['request_id']} {p['team']}/{p['name']} (>= {p['min_driver_major']})"
                                         for p in pinned) + ".")
            next_upgrade = None
            if plan is not None:
                overdue = plan.planned_for < today
                next_upgrade = {"id": plan.pk, "target_version": plan.target_version, "planned_for": plan.planned_for,
                                "scope": "pool" if plan.pool_id else "cluster", "note": plan.note, "overdue": overdue}
                stranded = impact["affected"]
                state += f"; next upgrade {plan.target_version} on {plan.planned_for:%Y-%m-%d}"
                notes.append(
                    f"Next planned upgrade: {plan.target_version} on {plan.planned_for:%Y-%m-%d}"
                    + (" (overdue: still planned)" if overdue else "") + "; it would strand "
                    + (", ".join(f"#{a['request_id']} {a['team']}/{a['name']} ({a['reason']})" for a in stranded)
                       if stranded else f"none of {plural(impact['requests_checked'], 'live request')}") + ".")
            else:
                state += "; no upgrade planned"
            items.append(Item(
                area=AREA, subject=f"{cluster.name}/{pool.name}", state=state, verdict=verdict, **fields,
                evidence={
                    "cluster": cluster.name, "pool": pool.name, "driver_versions": versions, "source": source,
                    "declared_driver_version": pool.driver_version or None, "pinned_requests": pinned,
                    "upgrade_owner": fields["owner"], "decision": decision_evidence(decision, scope),
                    "next_upgrade": next_upgrade, "impact": impact, "conflicts": conflicts,
                },
                notes=notes,
            ))  # fmt: skip
    owned = [i for i in items if i.verdict == Verdict.DECIDED]
    summary = {
        "pools": len(items), "pools_with_an_upgrade_owner": len(owned),
        "pools_owned_by_nobody": [i.subject for i in items if i.owner == NOBODY],
        "pinned_requests": sum(len(i.evidence["pinned_requests"]) for i in items),
        "planned_upgrades": sum(1 for i in items if i.evidence["next_upgrade"]),
    }  # fmt: skip
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary)

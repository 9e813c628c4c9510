"""7. Preemption per cluster and workload class: who yields GPUs to whom, decided through the policy's signed-off
priority rules (docs/preemption.md) or inherited from the scheduler's defaults (priority 0, preemptible by anything
above, 30 seconds after SIGTERM).

Per cluster and workload class, the verdict is:
- decided: a signed-off rule sets the priority of every combination of the class's answers, the cluster's scheduler
  holds all of it (a minimum runtime only where it can: `intake.decisions.MIN_RUNTIME_BACKENDS`, read by
  `priority_terms`), and every live
  request of the class on the cluster runs with it;
- inherited: no rule (or no signed-off rule) sets it for some of the class's answers, or live requests of the class
  on the cluster run with the scheduler's defaults (decided before the policy set a priority);
- conflict: the signed-off rule asks for a minimum runtime the cluster's scheduler cannot hold.
"""
from __future__ import annotations

from gpu.vocabulary import PRIORITY_TIER_WORDS, PRIORITY_VALUES, WORKLOAD_CLASSES
from intake.decisions import (Answers, duration_words, priority_rule, priority_terms, priority_words,
                              select_route)
from intake.selectors import policy_spec

from ..choices import Section, Verdict
from .common import Item, SectionResult, Snapshot, plural, words
from .sharing import answer_combinations

AREA = Section.PREEMPTION
INHERITED_WORDS = ("the scheduler's defaults: the cluster's default priority, preemptible by any higher-priority "
                   "pod at any moment, 30 seconds between SIGTERM and SIGKILL")


def _rules_per_class(snapshot: Snapshot) -> dict[str, dict]:
    """Per workload class: the rules setting its priority (key -> rule) and the answer combinations none covers."""
    found = {c: {"rules": {}, "uncovered": []} for c in WORKLOAD_CLASSES}
    if snapshot.policy is None:
        for workload_class in WORKLOAD_CLASSES:
            found[workload_class]["uncovered"] = ["every answer"]
        return found
    spec = policy_spec(snapshot.policy)
    by_key = {r.key: r for r in snapshot.policy.rules.all()}
    for combination in answer_combinations():
        answers = Answers(gpu_memory_gb=1, image="placeholder", **combination)
        rule = priority_rule(select_route(spec, answers), [g for g in spec.guardrails() if g.matches(answers)])
        entry = found[combination["workload_class"]]
        if rule is None:
            entry["uncovered"].append(" / ".join(words(v) for v in combination.values()))
        else:
            entry["rules"][rule.key] = by_key[rule.key]
    return found


def _item(cluster, workload_class: str, coverage: dict, live: list) -> Item:
    rules = list(coverage["rules"].values())
    unsigned = [r.key for r in rules if not (r.signed_off_at and r.signed_off_by)]
    running_inherited = [r for r in live if r.decision.priority is None]
    terms = [priority_terms(r, cluster.gang_scheduler) for r in rules]
    unheld = [t for t in terms if t.min_runtime_minutes and not t.min_runtime_enforced]
    notes = []
    if coverage["uncovered"]:
        notes.append(f"No priority rule covers {', '.join(coverage['uncovered'])}: {INHERITED_WORDS}.")
    if unsigned:
        notes.append(f"Nobody signed off {', '.join(unsigned)}.")
    if running_inherited:
        notes.append(f"Live requests of this class on {cluster.name} that run with {INHERITED_WORDS} (decided "
                     "before the policy set a priority): "
                     + ", ".join(f"#{r.pk} {r.team.slug}/{r.name}" for r in running_inherited) + ".")
    for t in unheld:
        notes.append(f"Rule {t.rule} asks for at least {duration_words(t.min_runtime_minutes * 60)} before "
                     f"preemption, which {cluster.name}'s scheduler ({cluster.gang_scheduler}) cannot hold for one "
                     "workload: the work may be stopped at any time.")
    held = [] if not any(t.min_runtime_enforced for t in terms) else [
        "The minimum runtime is the pods' volcano.sh/cooldown-time, held by Volcano's cdp plugin: it must be enabled "
        "in the scheduler's configuration (docs/preemption.md)."]
    if coverage["uncovered"] or unsigned or running_inherited or not rules:
        verdict = Verdict.INHERITED
    elif unheld:
        verdict = Verdict.CONFLICT
    else:
        verdict = Verdict.DECIDED
    state = "; ".join(priority_words(t) for t in terms) if terms else f"not decided: {INHERITED_WORDS}"
    first = rules[0] if len(rules) == 1 else None
    return Item(
        area=AREA, subject=f"{cluster.name} / {workload_class}", state=state, verdict=verdict,
        owner=first.owner if first and verdict != Verdict.INHERITED else None,
        signed_off_by=first.signed_off_by or None if first else None,
        signed_off_at=first.signed_off_at if first else None, rationale=first.rationale if first else "",
        evidence={
            "cluster": cluster.name, "workload_class": workload_class, "gang_scheduler": cluster.gang_scheduler,
            "rules": [r.key for r in rules], "uncovered_answers": coverage["uncovered"],
            "priorities": [{**t.to_json(), "value": PRIORITY_VALUES[t.tier],
                            "tier_words": PRIORITY_TIER_WORDS[t.tier]} for t in terms],
            "live_requests": len(live), "live_requests_inherited": [r.pk for r in running_inherited],
        },
        notes=([f"Decided by {', '.join(r.key for r in rules)} and held by {cluster.name}'s scheduler."] + held
               if verdict == Verdict.DECIDED else notes + held),
    )


def build(snapshot: Snapshot) -> SectionResult:
    coverage = _rules_per_class(snapshot)
    items = []
    for cluster in snapshot.clusters:
        for workload_class in WORKLOAD_CLASSES:
            live = [r for r in snapshot.live_requests if r.decision.cluster == cluster.name
                    and r.answers.get("workload_class") == workload_class]
            items.append(_item(cluster, workload_class, coverage[workload_class], live))
    per_cluster = {
        cluster.name: {v: sum(1 for i in items if i.evidence["cluster"] == cluster.name and i.verdict == v)
                       for v in Verdict.values}
        for cluster in snapshot.clusters
    }
    decided = [name for name, counts in per_cluster.items() if counts[Verdict.DECIDED] == len(WORKLOAD_CLASSES)]
    summary = {"clusters": per_cluster, "clusters_decided": decided,
               "clusters_inheriting": [n for n, c in per_cluster.items() if c[Verdict.INHERITED]]}
    notes = [f"{len(decided)} of {plural(len(per_cluster), 'cluster')} run every workload class on priorities the "
             "policy decided; the rest inherit some of the scheduler's defaults or cannot hold what it asks."]
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary, notes=notes)

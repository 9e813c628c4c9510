"""3. Gang scheduling per cluster: the backend as declared and as discovery found it installed, the native Workload
API's shape for the cluster's Kubernetes version, and, for the multi-pod requests of the window, how many stalled
and the GPU-hours their stalls burnt (in SQL, `GangStall.objects.with_burnt`)."""
from __future__ import annotations

from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.db.models.fields.json import KeyTextTransform

from gpu import gangapi
from gpu.vocabulary import KUEUE, NATIVE
from intake.models import GpuRequest
from intake.words import GANG_BACKEND_WORDS
from provisioning.models import GangStall

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
from .scheduling import kubernetes_minor

AREA = Section.GANG_SCHEDULING
BACKEND_WORDS = {**GANG_BACKEND_WORDS, NATIVE: "native Workload API"}


def native_shape(version: str) -> dict | None:
    """KEP-4671 by Kubernetes minor (reference §5.1): what the portal renders for `native` (gpu.gangapi)."""
    shape = gangapi.NATIVE_SHAPES.get(kubernetes_minor(version))
    if shape is None:
        return None
    return {"api_version": shape.api_version, "kinds": list(shape.kinds), "pod_field": shape.pod_field,
            "stage": shape.stage, "on_by_default": shape.on_by_default}


def _native_text(version: str, shape: dict | None) -> str:
    if shape is None:
        return f"Kubernetes {version} has no native gang API (the Workload API starts in 1.35)."
    return (f"Native gang on Kubernetes {version}: {shape['api_version']} {' + '.join(shape['kinds'])}, pods join "
            f"through {shape['pod_field']} ({shape['stage']}, off by default: the API and its feature gates must be "
            "enabled).")


def approval_hold(cluster, verdict: str) -> dict:
    """What holds a request's approval on this cluster: Kueue's admission check the portal decides, or only the
    portal applying after approval (docs/admission-check.md). Made or inherited together with the backend."""
    how = "decided with the signed-off gang backend" if verdict == Verdict.DECIDED else (
        "inherited from the cluster's gang backend setting: nobody signed it off")
    if cluster.gang_scheduler == KUEUE and cluster.api_server:
        held_by = "admission_check"
        text = ("Approval is enforced by the cluster: Kueue admits no Workload of the team queues until the portal's "
                "admission check gpu-portal-approval is Ready; a Job applied with kubectl waits in the approval "
                f"queue as a request found in the cluster ({how}).")
    elif cluster.gang_scheduler == KUEUE:
        held_by = "portal_apply"
        text = ("Approval is held by the portal only: it applies after approval. The cluster runs Kueue but the "
                "portal has no API server for it, so it cannot decide an admission check there and work applied "
                f"with kubectl is not held ({how}).")
    else:
        held_by = "portal_apply"
        text = (f"Approval is held by the portal only: it applies after approval; {BACKEND_WORDS.get(cluster.gang_scheduler, cluster.gang_scheduler)} "
                f"has no admission check the portal decides, so work applied with kubectl is not held ({how}).")
    return {"held_by": held_by, "verdict": verdict, "text": text}


def _kai_fair_share_gaps(cluster) -> list[str]:
    """The cluster's DRA MIG pools when KAI schedules it: their slices are outside KAI's queues (gangapi)."""
    if cluster.gang_scheduler != "kai":
        return []
    return [pool.name for pool in cluster.pools.all() if pool.sharing_mode == "mig"
            and (pool.scheduling_model or cluster.scheduling_model) == "dra"]


def _multi_pod(snapshot: Snapshot) -> tuple[dict, dict]:
    """Per cluster: multi-pod (gang) requests created in the window, and, for those, stalls and GPU-seconds
    burnt up to now. Two queries."""
    requests = dict(
        GpuRequest.objects.filter(created_at__gte=snapshot.start, created_at__lte=snapshot.now)
        .exclude(decision__gang=None).annotate(cluster=KeyTextTransform("cluster", "decision"))
        .values_list("cluster").annotate(n=Count("id"))
    )
    stalls = {
        row["cluster__name"]: row
        for row in GangStall.objects.with_burnt(snapshot.now)
        .filter(request__created_at__gte=snapshot.start, request__created_at__lte=snapshot.now)
        .values("cluster__name")
        .annotate(stalled=Count("request", distinct=True), stalls=Count("id"),
                  open=Count("id", filter=Q(ended_at__isnull=True)), burnt=Sum("burnt_gpu_seconds"))
    }
    return requests, stalls


def build(snapshot: Snapshot) -> SectionResult:
    multi_pod, stalls = _multi_pod(snapshot)
    items = []
    for cluster in snapshot.clusters:
        declared = cluster.gang_scheduler
        installed = list(cluster.discovered_gang_schedulers or [])
        installed_backends = [g.get("backend") for g in installed]
        synced = cluster.last_synced_at is not None
        shape = native_shape(cluster.kubernetes_version)
        decision = snapshot.decision(DecisionArea.GANG_BACKEND, cluster)
        conflicts = [d["message"] for d in cluster.discrepancies if d.get("field") == "gang_scheduler"]
        if declared == NATIVE and shape is None:
            conflicts.append(f"Declared the native Workload API on Kubernetes {cluster.kubernetes_version}, which "
                             "has none.")
        if declared == NATIVE and shape and synced and NATIVE in installed_backends:
            served = next(g for g in installed if g.get("backend") == NATIVE).get("versions") or []
            expected = shape["api_version"].rsplit("/", 1)[1]
            if expected not in served:
                conflicts.append(f"The portal renders {shape['api_version']} for Kubernetes "
                                 f"{cluster.kubernetes_version}; the API server serves {', '.join(served) or 'none'}.")
        if decision is not None and decision.is_signed_off and decision.decided_value != declared:
            conflicts.append(f"Signed off {BACKEND_WORDS.get(decision.decided_value, decision.decided_value)} "
                             f"({decision.signed_off_by_name}, {decision.signed_off_at:%Y-%m-%d}), but the cluster "
                             f"is set to {BACKEND_WORDS.get(declared, declared)}.")
        verdict = Verdict.CONFLICT if conflicts else (
            Verdict.DECIDED if decision is not None and decision.is_signed_off else Verdict.INHERITED)
        count = multi_pod.get(cluster.name, 0)
        stall = stalls.get(cluster.name) or {}
        burnt_hours = (Decimal(stall.get("burnt") or 0) / Decimal(3600)).quantize(Decimal("0.001"))
        installed_text = (", ".join(f"{g.get('backend')} ({', '.join(g.get('versions') or [])})" for g in installed)
                          or "none") if synced else "not known (never synced)"
        notes = list(conflicts) + draft_note(decision)
        if verdict == Verdict.INHERITED and not draft_note(decision):
            notes.append(f"{capitalised(BACKEND_WORDS.get(declared, declared))} is the cluster's setting; nobody "
                         "signed it off.")
        if declared == NATIVE or shape is None:
            notes.append(_native_text(cluster.kubernetes_version, shape))
        hold = approval_hold(cluster, verdict)
        notes.append(hold["text"])
        kai_gaps = _kai_fair_share_gaps(cluster)
        if kai_gaps:
            notes.append(f"{gangapi.KAI_DRA_MIG_GAP} Pools: {', '.join(kai_gaps)}.")
        notes.append(f"{plural(count, 'multi-pod request')} in the last {snapshot.days} days; "
                     f"{stall.get('stalled', 0)} stalled ({plural(stall.get('stalls', 0), 'stall')}), "
                     f"{burnt_hours} GPU-hours burnt while waiting.")
        items.append(Item(
            area=AREA, subject=cluster.name,
            state=f"{BACKEND_WORDS.get(declared, declared)} (cluster setting); installed: {installed_text}",
            verdict=verdict, **decision_fields(decision),
            evidence={
                "cluster": cluster.name, "declared": declared, "synced": synced, "installed": installed,
                "kubernetes_version": cluster.kubernetes_version, "native_api": shape,
                "decision": decision_evidence(decision), "conflicts": conflicts,
                "multi_pod_requests_in_window": count, "stalled_requests": stall.get("stalled", 0),
                "stalls": stall.get("stalls", 0), "open_stalls": stall.get("open", 0),
                "burnt_gpu_hours": str(burnt_hours), "approval_hold": hold, "kai_fair_share_gaps": kai_gaps,
            },
            notes=notes,
        ))  # fmt: skip
    burnt = sum((Decimal(s.get("burnt") or 0) for s in stalls.values()), Decimal(0))
    summary = {
        "multi_pod_requests_in_window": sum(multi_pod.values()),
        "stalled_requests": sum(s.get("stalled", 0) for s in stalls.values()),
        "burnt_gpu_hours": str((burnt / Decimal(3600)).quantize(Decimal("0.001"))),
    }
    return SectionResult(key=AREA, title=Section(AREA).label, items=items, summary=summary)

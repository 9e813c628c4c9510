"""Kueue preemptions, in plain words: the Workloads Kueue evicted with reason `Preempted` (kubernetes-sigs/kueue
v0.19.2 `apis/kueue/v1beta2/workload_types.go` WorkloadEvicted, `pkg/scheduler/preemption/preemption.go`
preemptionMessage: "Preempted to accommodate a workload (UID: <uid>, JobUID: <job uid>) due to <why>; ..."), each
as a `PlainEvent` of the request whose Job the Workload admits, naming the request whose Job preempted it. Pure: the
API server's dicts in, events out; the Jobs map the Workloads' owners and the message's JobUID to requests."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .words import PlainEvent

JOB_UID = re.compile(r"JobUID: ([^)\s,]+)\)")
DUE_TO = re.compile(r"\) due to ([^;]+)")


def _evicted_preempted(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (workload.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Evicted" and condition.get("status") == "True" \
                and condition.get("reason") == "Preempted":
            return condition
    return None


def kueue_preemption_events(workloads: Iterable[Mapping[str, Any]],
                            requests_by_job_uid: Mapping[str, tuple[int, str]]) -> list[PlainEvent]:
    """`requests_by_job_uid`: the portal's Jobs, uid -> (request id, namespace/name)."""
    events = []
    for workload in workloads:
        evicted = _evicted_preempted(workload)
        if evicted is None:
            continue
        meta = workload.get("metadata") or {}
        owner = next((r for r in meta.get("ownerReferences") or () if r.get("kind") == "Job"), {})
        mine = requests_by_job_uid.get(owner.get("uid", ""))
        if mine is None:
            continue
        message = (evicted.get("message") or "").strip()
        found = JOB_UID.search(message)
        preemptor = requests_by_job_uid.get(found.group(1)) if found else None
        who = (f"request #{preemptor[0]} (Job {preemptor[1]})" if preemptor else
               "a higher-priority workload" + (f" (Job uid {found.group(1)})" if found else ""))
        why = DUE_TO.search(message)
        text = (f"Kueue preempted this request's Workload {meta.get('namespace', '')}/{meta.get('name', '')} "
                f"(Evicted, reason Preempted) to make room for {who}, due to "
                f"{why.group(1) if why else 'its higher priority'}: its Job is suspended and its pods are stopped "
                f"(each with its termination grace period to checkpoint), and it waits in its queue to be admitted "
                f"again. Kueue said: {message}")
        events.append(PlainEvent(mine[0], f"{meta.get('uid', '')}:kueue-preempted:{evicted.get('lastTransitionTime', '')}"[:200],
                                 "Preempted", " ".join(text.split())[:1000]))
    return events

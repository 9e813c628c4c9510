"""Status reconciliation: pods as the API server sends them -> the status each request should have, and the
database and cluster side that applies it.

The pure part imports nothing from Django (tests/provisioning/reconcile/test_purity.py):
- `facts`: pods -> facts; `rules`: facts -> the status, plain-words events and the state of a gang;
  `words`: what a pod's state says, in plain words; `store`: a cluster's pods kept as their facts, by request.
The Django part:
- `cycle`: one cycle, `status_reconcile(cluster=, pods=, now=)` (or `status_reconcile_facts`); `stalls`: stalled-gang records, in bulk;
- `notifications`: stalled-gang notices, queued once as portal notices (portal.notices delivers them);
- `watch`: the per-cluster list/watch loop, `cluster_status_reconcile(cluster_id=)`, and beat's fan-out.

The Django part's names are loaded on first use, so that importing the pure rules (from here or from
`provisioning.reconcile.rules`) never loads Django.
"""

import importlib

from .facts import PodFact, facts_by_request, pod_fact, request_id_of
from .rules import (
    RECONCILED_STATUSES,
    Assessment,
    GangState,
    PendingPod,
    RequestContext,
    Thresholds,
    assess,
    decimal_words,
    duration_words,
    equivalents_words,
    gang_state,
)
from .store import PodStore
from .words import PlainEvent, pod_events

_DJANGO_SIDE = {
    "CycleOutcome": "cycle",
    "gang_thresholds": "cycle",
    "status_reconcile": "cycle",
    "status_reconcile_facts": "cycle",
    "gang_notify": "notifications",
    "gang_notify_many": "notifications",
    "stall_notice_key": "notifications",
    "StallNotice": "notifications",
    "stalls_write": "stalls",
    "RunOutcome": "watch",
    "cluster_status_reconcile": "watch",
    "status_reconcile_all": "watch",
}


def __getattr__(name: str):
    module = _DJANGO_SIDE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "RECONCILED_STATUSES",
    "Assessment",
    "CycleOutcome",
    "GangState",
    "PendingPod",
    "PlainEvent",
    "PodStore",
    "PodFact",
    "RequestContext",
    "RunOutcome",
    "StallNotice",
    "Thresholds",
    "assess",
    "cluster_status_reconcile",
    "decimal_words",
    "duration_words",
    "equivalents_words",
    "facts_by_request",
    "gang_notify",
    "gang_notify_many",
    "gang_state",
    "stall_notice_key",
    "pod_events",
    "pod_fact",
    "request_id_of",
    "status_reconcile",
    "status_reconcile_all",
    "status_reconcile_facts",
    "stalls_write",
]

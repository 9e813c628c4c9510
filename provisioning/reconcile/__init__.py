"""Status reconciliation, the pure part: pods as the API server sends them -> facts -> the status each request
should have, plain-words events and the state of its gang. Nothing here imports Django or talks to a cluster;
`provisioning.reconciliation` applies the results to the database and runs the list/watch loop.
"""

from .facts import PodFact, facts_by_request, pod_fact, request_id_of
from .rules import (
    RECONCILED_STATUSES,
    Assessment,
    GangState,
    PendingPod,
    RequestContext,
    Thresholds,
    assess,
    duration_words,
    equivalents_words,
    gang_state,
)
from .words import PlainEvent, pod_events

__all__ = [
    "RECONCILED_STATUSES",
    "Assessment",
    "GangState",
    "PendingPod",
    "PlainEvent",
    "PodFact",
    "RequestContext",
    "Thresholds",
    "assess",
    "duration_words",
    "equivalents_words",
    "facts_by_request",
    "gang_state",
    "pod_events",
    "pod_fact",
    "request_id_of",
]

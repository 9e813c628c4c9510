"""The placement decision: a pure function of (answers, policy, inventory) -> decision.

Nothing here touches the database. The same function serves the preview, the request, and the re-evaluation of
old requests under a new policy version. Every field of the decision carries a reason saying where it came
from: `policy` (a rule, named), `answer` (the engineer asked for it) or `default` (nothing chose it; the platform
inherited it).

`decision` is the decision as a type (`Decision`, stored with `to_json()`, read back with `from_json()`);
`inputs` holds what a decision is made from; `steps` is `decide()` and its six steps; `rules`, `placement` and
`terms` do the work of the steps; `reasons` and `summary` write it out in words.
"""
from gpu.vocabulary import STRATEGY_WORDS

from .decision import (DECISION_VERSION, ApprovalLimits, Decision, DecisionShapeError, DriverTerms, Gang, Lease,
                       MultiNode, Priority, Reason)
from .inputs import Answers, ClusterSpec, Inventory, PolicySpec, PoolSpec, RuleSpec
from .placement import ONE_DEVICE_PER_REPLICA
from .priority import MIN_RUNTIME_BACKENDS, duration_words, priority_rule, priority_terms, priority_words
from .reasons import PlacementImpossible, Reasons
from .rules import PLATFORM_DEFAULT_STRATEGY, DriverNeed, driver_need, select_route
from .steps import decide
from .summary import AWAITING_APPROVAL, summarise
from .terms import REVIEW, AutoApproval, auto_approval, lease_decision

__all__ = [
    "AWAITING_APPROVAL", "DECISION_VERSION", "MIN_RUNTIME_BACKENDS", "ONE_DEVICE_PER_REPLICA",
    "PLATFORM_DEFAULT_STRATEGY", "REVIEW", "STRATEGY_WORDS", "Answers", "ApprovalLimits", "AutoApproval", "ClusterSpec", "Decision", "DecisionShapeError",
    "DriverNeed", "DriverTerms", "Gang", "Inventory", "Lease", "MultiNode", "PlacementImpossible", "PolicySpec",
    "PoolSpec", "Priority", "Reason", "Reasons", "RuleSpec", "auto_approval", "decide", "driver_need", "duration_words",
    "lease_decision", "priority_rule", "priority_terms", "priority_words", "select_route", "summarise",
]

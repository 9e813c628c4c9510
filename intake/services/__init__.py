"""Writes of the request core and the policy, one module per job. Every state change goes through
`request_transition`.

`evaluation` (answers -> decision, stored nowhere), `transitions` (the state machine's one door) and
`policy_versions` (drafts and sign-off). The workflows that use them (submit, preview, approve, reject, cancel,
lease expiry) are one layer up, in `workflows.services`, where they call provisioning and chargeback directly; who
may do what to a request is `intake.selectors.request_action_refusal`.
"""
from .evaluation import AnswersError, Evaluation, auto_approval_team_gate, request_evaluate
from .policy_versions import policy_version_draft_create, policy_version_sign_off
from .transitions import TransitionChange, check_edge, check_expected, request_transition, request_transition_many

__all__ = [
    "AnswersError", "Evaluation", "TransitionChange", "auto_approval_team_gate", "check_edge", "check_expected",
    "policy_version_draft_create", "policy_version_sign_off", "request_evaluate", "request_transition",
    "request_transition_many",
]

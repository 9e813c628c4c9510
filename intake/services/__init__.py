"""Writes for requests and policy, one module per job. Every state change goes through `request_transition`.

`evaluation` (answers -> decision, stored nowhere), `preview`, `submission`, `approval` (and rejection),
`cancellation`, `transitions` (the state machine's one door) and `policy_versions` (drafts and sign-off). Lease
extensions are in `intake.leases`; who may do what to a request is `intake.selectors.request_action_refusal`.
"""
from .approval import ApprovalCheck, _lock_team_quota, approval_check, request_approve, request_reject
from .cancellation import request_cancel
from .evaluation import AnswersError, Evaluation, auto_approval_team_gate, request_evaluate
from .policy_versions import policy_version_draft_create, policy_version_sign_off
from .preview import Preview, request_preview
from .submission import request_rights_denied, request_submit
from .transitions import TransitionChange, request_transition, request_transition_many

__all__ = [
    "AnswersError", "ApprovalCheck", "Evaluation", "Preview", "TransitionChange", "_lock_team_quota",
    "approval_check", "auto_approval_team_gate", "policy_version_draft_create", "policy_version_sign_off",
    "request_approve", "request_cancel", "request_evaluate", "request_preview", "request_reject",
    "request_rights_denied", "request_submit", "request_transition", "request_transition_many",
]

"""The request workflows, one module per job: `submission` (decided, stored, approved on the spot when the rule's
automatic approval holds), `preview` (what the user would get, stored nowhere), `approval` (and rejection) and
`cancellation`. Each goes through the state machine (`intake.services.request_transition`) and then calls what the
new status needs directly: an approval queues provisioning's apply job, a cancel its teardown."""
from .approval import ApprovalCheck, _lock_team_quota, approval_check, request_approve, request_reject
from .cancellation import request_cancel
from .preview import Preview, request_preview
from .submission import request_rights_denied, request_submit

__all__ = [
    "ApprovalCheck", "Preview", "_lock_team_quota", "approval_check", "request_approve", "request_cancel", "request_preview",
    "request_reject", "request_rights_denied", "request_submit",
]

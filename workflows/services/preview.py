"""The preview: what a user would get and the objects that would be applied, stored nowhere."""
from __future__ import annotations

from dataclasses import dataclass, field

from intake.decisions import Decision
from intake.services import request_evaluate
from portal.models import Team
from provisioning.preview import preview_objects

from .submission import require_request_rights


@dataclass(frozen=True)
class Preview:
    decision: Decision
    manifests: list[dict]
    # "Kind name" per object, as it will be applied; the request id, unknown yet, shown as <id> (names.py).
    object_names: list[str] = field(default_factory=list)
    answers: dict = field(default_factory=dict)  # as normalised for the decision


def request_preview(*, user, team: Team, raw_answers, name: str = "preview") -> Preview:
    """What the user would get, and the objects that would be applied (named as request #0). Stores nothing.

    `object_names` are the names the objects will have: rendered for two ids, so that what depends on the id
    (it is not known yet) shows as a placeholder rather than as a made-up name."""
    require_request_rights(user=user, team=team)
    evaluation = request_evaluate(raw_answers=raw_answers, team=team)
    manifests, object_names = preview_objects(team=team, name=name, answers=evaluation.answers.values,
                                              decision=evaluation.decision)
    return Preview(decision=evaluation.decision, manifests=manifests, object_names=object_names,
                   answers=evaluation.answers.values)

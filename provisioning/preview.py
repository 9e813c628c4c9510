"""The objects a previewed request would get, and the names they will have: rendered for the preview
(`workflows.services.request_preview` calls it)."""
from __future__ import annotations

from intake.decisions import Decision
from portal.errors import InvalidInput

from .manifests import RenderError
from .manifests.names import PREVIEW_MAX_ID, preview_name
from .selectors import manifests_render


def preview_objects(*, team, name: str, answers: dict, decision: Decision) -> tuple[list[dict], list[str]]:
    """(objects named as request #0, "Kind name" per object). The names come from rendering for two ids, so that
    what depends on the id (not known before submission) shows as a placeholder rather than as a made-up name."""
    try:
        manifests = manifests_render(team=team, request_id=0, name=name, answers=answers, decision=decision)
        small, large = (manifests_render(team=team, request_id=request_id, name=name, answers=answers,
                                         decision=decision)
                        for request_id in (1, PREVIEW_MAX_ID))
    except RenderError as exc:
        raise InvalidInput(f"These answers cannot be turned into Kubernetes objects: {exc}", field="answers") from None
    object_names = []
    for a, b in zip(small, large, strict=True):
        shown = preview_name(name, with_small_id=a["metadata"]["name"], with_large_id=b["metadata"]["name"])
        object_names.append(f"{a['kind']} {shown or 'named after the request id (shortened, known on submission)'}")
    return manifests, object_names

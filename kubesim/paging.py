"""LIST pagination and compacted history for the fake API server, as kube-apiserver does them (pure functions; the
server calls them from its LIST and WATCH).

- `limit` and `continue` (kubernetes/apiserver v0.37, `pkg/storage/continue.go`): a page holds at most `limit`
  items in key order (namespace/name); when more remain the list's metadata carries `continue`, the base64url
  (unpadded) JSON `{"v": "meta.k8s.io/v1", "rv": <list revision>, "start": "<last key>\\x00"}`, and every page of
  the same list is served at that revision, so the pages are one consistent snapshot and the list's
  `resourceVersion` is where a watch resumes. A token that does not decode is a 400. `remainingItemCount` is set
  only when the list has no selector, as the etcd store does.
- Compaction (etcd's, and the watch cache's window): history before the compacted revision is gone. A continue
  token at a compacted revision answers 410 Expired with the "inconsistent" token of `pkg/storage/etcd3/errors.go`
  (revision -1: the rest of the list as it is now); a watch from a compacted resourceVersion gets an ERROR event
  carrying a 410 Expired Status, "too old resource version: <rv> (<compacted>)"
  (`pkg/storage/cacher/watch_cache_history.go`).
"""
from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONTINUE_VERSION = "meta.k8s.io/v1"
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
LATEST = -1  # a continue token's revision meaning "as the store is now" (the inconsistent continuation)

Keyed = tuple[str, Mapping[str, Any]]  # ("<namespace>/<name>" or "<name>", the object)


class InvalidList(ValueError):
    """A limit or continue parameter the API server rejects with 400."""


class Expired(Exception):
    """410 Expired: the revision asked for is compacted; `continue_token` (may be empty) goes in the Status."""

    def __init__(self, message: str, continue_token: str = "") -> None:
        super().__init__(message)
        self.message, self.continue_token = message, continue_token


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta.get("name", "")


def encode_continue(start: str, revision: int) -> str:
    raw = json.dumps({"v": CONTINUE_VERSION, "rv": revision, "start": start}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple[str, int]:
    """(the key the page starts at, the list's revision); InvalidList as the API server words it."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidList(f"continue key is not valid: {exc}") from None
    if not isinstance(data, dict) or data.get("v") != CONTINUE_VERSION:
        raise InvalidList("continue key is not valid: server does not recognize this encoded version")
    revision, start = data.get("rv"), data.get("start")
    if not isinstance(revision, int) or revision == 0:
        raise InvalidList("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise InvalidList("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
    return start, revision


def _limit(params: Mapping[str, str]) -> int:
    raw = params.get("limit")
    if raw in (None, ""):
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise InvalidList(f"invalid limit {raw!r}: not an integer") from None
    return max(value, 0)  # a negative or zero limit lists everything, as the API server does


@dataclass(frozen=True)
class Page:
    items: list[Mapping[str, Any]]
    resource_version: int
    continue_token: str = ""
    remaining: int | None = None  # remainingItemCount, when the server may say it

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"resourceVersion": str(self.resource_version)}
        if self.continue_token:
            meta["continue"] = self.continue_token
            if self.remaining is not None:
                meta["remainingItemCount"] = self.remaining
        return meta


def list_page(params: Mapping[str, str], *, current: int, compacted: int,
              items_at: Callable[[int], Sequence[Keyed]], selected: Callable[[Mapping[str, Any]], bool],
              has_selector: bool) -> Page:
    """One page of a LIST. `items_at(revision)` gives the resource's objects at a revision, in key order;
    `selected` is the request's namespace and selector filter."""
    limit, token = _limit(params), params.get("continue") or ""
    revision, start = current, ""
    if token:
        start, revision = decode_continue(token)
        if revision != LATEST and revision < compacted:
            raise Expired(CONTINUE_EXPIRED, encode_continue(start, LATEST))
        if revision == LATEST:
            revision = current
    matching = [(key, obj) for key, obj in items_at(revision) if key >= start and selected(obj)]
    if not limit or len(matching) <= limit:
        return Page([obj for _, obj in matching], revision)
    shown = matching[:limit]
    return Page([obj for _, obj in shown], revision, encode_continue(shown[-1][0] + "\x00", revision),
                None if has_selector else len(matching) - limit)


def rewind(items: Sequence[Keyed], changes: Sequence[tuple[str, str, Mapping | None, Mapping]]) -> list[Keyed]:
    """The objects as they were before `changes` (oldest first: (type, key, old, new)) happened, in key order."""
    state = dict(items)
    for change_type, key, old, _new in reversed(changes):
        if change_type == "ADDED":
            state.pop(key, None)
        elif old is not None:  # MODIFIED or DELETED: back to what it was
            state[key] = old
    return sorted(state.items())


def watch_expired(since: int, compacted: int) -> dict[str, Any] | None:
    """The ERROR event a watch from `since` gets when that revision is compacted, else None."""
    if since >= compacted:
        return None
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": f"too old resource version: {since} ({compacted})", "reason": "Expired", "code": 410}
    return {"type": "ERROR", "object": status}


def expired_status(error: Expired) -> dict[str, Any]:
    """The 410 Status of an expired continue token, with the token that continues inconsistently."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {"continue": error.continue_token} if
            error.continue_token else {}, "status": "Failure", "message": error.message, "reason": "Expired",
            "code": 410}

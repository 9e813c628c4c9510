"""The one interface both appliers implement, what they return, and the two kinds of error they raise.

A task retries a `TransientApplyError` (honouring `retry_after` when the server gave one) and marks its job failed
with `message` on a `PermanentApplyError`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# A rendered Kubernetes object: plain dicts, as built by provisioning.manifests.
KubeObject = Mapping[str, Any]


@dataclass(frozen=True)
class AppliedRef:
    """Where one object ended up. `namespace` is "" for cluster-scoped objects.

    For the Kubernetes applier `uid` and `resource_version` are the API server's; the GitOps applier has no uid
    ("") and gives the commit that holds the object as its `resource_version`.
    """

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str


@runtime_checkable
class Applier(Protocol):
    def apply(self, objects: Sequence[KubeObject]) -> list[AppliedRef]:
        """Create or update `objects` in the order given; applying the same objects again changes nothing."""
        ...

    def delete(
        self, selector: Mapping[str, str], namespaces: Sequence[str], kinds: Sequence[tuple[str, str]]
    ) -> list[AppliedRef]:
        """Delete every object of `kinds` ((apiVersion, kind) pairs, in that order) whose labels match `selector`,
        in `namespaces` for namespaced kinds; deleting what is already gone is not an error."""
        ...

    def close(self) -> None:
        """Release connections; the applier is not used afterwards."""
        ...


class ApplyError(Exception):
    """Base of applier errors. `status` is the HTTP status when an API server answered."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after


class TransientApplyError(ApplyError):
    """Worth retrying as is: timeouts, unreachable server, throttling, conflicts, server errors, a held lock."""


class PermanentApplyError(ApplyError):
    """Retrying will not help until someone changes the objects, the credentials or the cluster."""


def require_selector(selector: Mapping[str, str]) -> None:
    """An empty selector matches everything: refuse it rather than delete a whole cluster's objects."""
    if not selector:
        raise ValueError("delete() needs a non-empty label selector")

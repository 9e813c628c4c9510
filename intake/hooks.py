"""What the request state machine announces to the layers above intake, which subscribe from their
`AppConfig.ready()` (provisioning: "on entering approved, enqueue the apply job"), so that intake never imports them.

Hooks run inside the transition's transaction, under the request's row lock, in the order they were registered; work
they cause is dispatched after commit (`transaction.on_commit`), as every state change here does.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .models import GpuRequest


class EnteringHook(Protocol):
    def __call__(self, *, gpu_request: GpuRequest, from_status: str) -> None: ...


_ON_ENTERING: dict[str, dict[str, EnteringHook]] = {}


def on_entering(status: str, name: str, hook: EnteringHook) -> None:
    """Run `hook` whenever a request enters `status`. Registered by `name`, so a second `ready()` (tests) replaces
    rather than doubles it."""
    _ON_ENTERING.setdefault(status, {})[name] = hook


def entering_hooks(status: str) -> list[Callable[..., None]]:
    return list(_ON_ENTERING.get(status, {}).values())


def announce_entering(gpu_request: GpuRequest, *, from_status: str, to_status: str) -> None:
    """Called by `request_transition` and `request_transition_many` once the new status is saved."""
    for hook in entering_hooks(to_status):
        hook(gpu_request=gpu_request, from_status=from_status)

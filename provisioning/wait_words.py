"""Sentences of the wait explanation that are not the schedulers' own reasons: when the scheduler and the portal's
inventory disagree, and why a request waiting for approval waits. Pure: plain values in, words out; the estimator
(`provisioning.wait_reasons`) stays apart from them."""
from __future__ import annotations

import datetime


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def disagreement_words(*, scheduler_says: str, inventory_says: str, synced_at: datetime.datetime | None,
                       cluster: str) -> str:
    """The scheduler cannot place the pods the last inventory sync has room for: say both, and what to check."""
    when = f"synced {synced_at:%Y-%m-%d %H:%M} UTC" if synced_at else "never synced"
    return (f"The scheduler and the portal's inventory disagree. The scheduler says: {scheduler_says.rstrip('.')}. "
            f"The inventory of {cluster} ({when}) says: {inventory_says.rstrip('.')}. Check the nodes' taints and "
            "cordons (kubectl describe node), whether another scheduler (the pods' schedulerName) or pods the "
            f"portal does not see hold the GPUs, and whether the inventory is stale: sync {cluster} again "
            "(manage.py sync_inventory, or POST /api/v1/clusters/{id}/sync/) and compare.")


def approval_wait_words(*, ahead: int, fit_verdict: str, fit_reason: str, holds_quota: bool | None,
                        found: bool = False) -> str:
    """"Waiting for the platform team: 2 ahead in the queue; it fits now (...); no quota is held." `holds_quota`:
    None when the portal cannot know; `found`: a Kueue Workload found in the cluster, whose reserved quota the
    portal's admission check gives back (Retry) while it waits (docs/admission-check.md)."""
    queue = "first in the approval queue" if ahead == 0 else f"{_plural(ahead, 'request')} ahead in the queue"
    fit = {"fits_now": "it fits now", "fits_after": "it does not fit now",
           "never": "it cannot fit its pool as the pool is now"}.get(fit_verdict, "whether it fits is not known")
    if found:
        quota = ("waiting for approval; no quota is held (the portal's admission check answers Retry whenever Kueue "
                 "reserves quota for its Workload, and Kueue releases it)")
    elif holds_quota is None:
        quota = ("the portal holds no quota for it, but its Kueue Workload may already reserve quota in the team's "
                 "ClusterQueue while it waits for the portal's admission check")
    elif holds_quota:
        quota = "it counts against the team's quota already"
    else:
        quota = "no quota is held for it until it is approved (nothing is applied to the cluster before)"
    reason = f" ({fit_reason.rstrip('.')})" if fit_reason else ""
    return f"Waiting for the platform team: {queue}; {fit}{reason}; {quota}."

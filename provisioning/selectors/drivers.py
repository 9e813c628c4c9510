"""Driver upgrade impact: the live requests a pool's move to another NVIDIA driver would strand, and why."""
from __future__ import annotations

import re

from gpu.catalogue import load_catalogue
from intake.models import GpuRequest
from portal.errors import InvalidInput

from ..choices import Strategy
from ..models import NodePool
from .quota import HOLDING_STATUSES

DRIVER_VERSION_RE = re.compile(r"^\d{3}(\.\d+){0,2}$")


def driver_upgrade_impact(*, pool: NodePool, driver_version: str, requests=None) -> dict:
    """If `pool` moved to `driver_version`: the approved, provisioning, running and stalled requests placed on it
    that could no longer be scheduled there (their driver floor, or the GPU's MIG minimum), with their owners.
    `requests`: live requests already loaded (with team and requester), for callers asking about many pools;
    those placed on this pool are checked."""
    if not DRIVER_VERSION_RE.match(driver_version or ""):
        raise InvalidInput("A driver version such as 580.65.06.", field="driver_version")
    major = int(driver_version.split(".")[0])
    catalogue = load_catalogue()

    def version_key(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".") if p.isascii() and p.isdigit())

    if requests is None:
        requests = (
            GpuRequest.objects.filter(status__in=HOLDING_STATUSES, decision__cluster=pool.cluster.name,
                                      decision__node_pool=pool.name)
            .select_related("team", "requested_by").order_by("id")
        )
    else:
        requests = sorted((r for r in requests if r.status in HOLDING_STATUSES
                           and r.decision.cluster == pool.cluster.name
                           and r.decision.node_pool == pool.name), key=lambda r: r.pk)
    affected = []
    for request in requests:
        # The decided requirement: the strictest floor of the answer and the policy's rules, and a pinned branch.
        driver = request.decision.driver
        floor = (driver and driver.min_major) or request.answers.get("min_driver_major")
        reasons = []
        if driver and driver.branch and int(driver.branch) != major:
            reasons.append(f"is kept on the driver {driver.branch} branch")
        elif floor and int(floor) > major:
            reasons.append(f"asks for driver {floor} or newer")
        model = catalogue.models.get(request.decision.gpu_model)
        if request.strategy == Strategy.MIG and model and model.mig and (
            version_key(driver_version) < version_key(model.mig.min_driver)
        ):
            reasons.append(f"MIG on {model.key} needs driver {model.mig.min_driver} or newer")
        if reasons:
            affected.append({
                "request_id": request.pk, "name": request.name, "status": request.status,
                "team": request.team.slug, "cost_center": request.team.cost_center,
                "requested_by": request.requested_by.get_username(),
                "requested_by_email": request.requested_by.email, "min_driver_major": floor,
                "strategy": request.strategy, "reason": "; ".join(reasons),
            })  # fmt: skip
    current = (pool.discovered or {}).get("driver_versions") or ([pool.driver_version] if pool.driver_version else [])
    return {
        "cluster": pool.cluster.name, "pool": pool.name, "driver_version": driver_version, "driver_major": major,
        "current_driver_versions": current, "requests_checked": len(requests), "affected": affected,
    }  # fmt: skip

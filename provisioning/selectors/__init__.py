"""Reads of clusters and inventory, one module per concern: the rows (`clusters`), the decision function's snapshot
(`snapshot`), the renderer's inputs (`rendering`), capacity (`capacity`), quotas (`quota`), who holds the GPUs
(`holders`), the fit check (`fit_check`), driver upgrade impact (`drivers`), the MIG planner's inputs
(`mig`) and why requests wait, as last read (`waits`)."""
from __future__ import annotations

from .capacity import capacity_of, node_capacity_row
from .clusters import (
    SYNC_FAILED_FOR_OTHERS,
    cluster_detail_list,
    cluster_for_request,
    cluster_list,
    cluster_sync_error_for,
    pool_for_decision,
    pool_get,
)
from .drivers import DRIVER_VERSION_RE, driver_upgrade_impact
from .fit_check import request_fit
from .mig import mig_planner_inputs
from .quota import HOLDING_STATUSES, QUOTA_WORDS, QuotaState, team_quota_state
from .rendering import (
    cluster_profile,
    manifests_render,
    pool_device_plugin_config,
    request_manifests,
    request_spec,
    request_spec_from,
    team_spec,
)
from .snapshot import discovered_pool_spec, inventory_generation, inventory_snapshot, pool_spec
from .waits import request_wait, wait_estimate_error

__all__ = [
    "DRIVER_VERSION_RE", "HOLDING_STATUSES", "QUOTA_WORDS", "SYNC_FAILED_FOR_OTHERS", "QuotaState", "capacity_of",
    "cluster_detail_list", "cluster_for_request", "cluster_list", "cluster_profile", "cluster_sync_error_for",
    "discovered_pool_spec", "driver_upgrade_impact", "inventory_generation", "inventory_snapshot", "manifests_render",
    "mig_planner_inputs", "node_capacity_row", "pool_device_plugin_config", "pool_for_decision", "pool_get",
    "pool_spec", "request_fit", "request_manifests", "request_spec", "request_spec_from", "team_quota_state",
    "team_spec", "request_wait", "wait_estimate_error",
]

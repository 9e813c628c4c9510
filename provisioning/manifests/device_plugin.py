"""The NVIDIA device plugin config a pool's nodes must run for the pods the renderer writes for it: one entry of
the plugin's ConfigMap, the one the nodes' `nvidia.com/device-plugin.config` label selects (reference §1.3-§1.5).

Shape from NVIDIA/k8s-device-plugin v0.20.0 `api/config/v1/{config.go,sharing.go,replicas.go}`: `version: v1`,
`flags.migStrategy`, and for a shared pool `sharing.timeSlicing` or `sharing.mps` with `renameByDefault` and
`resources: [{name: nvidia.com/gpu, replicas: N}]` (the plugin ignores per-resource renames and device lists).
MPS keeps `failRequestsGreaterThanOne` on (its default when unset, `config.go`): an MPS client gets an equal
share, and a pod asking for two would get two clients' limits on one GPU. Time-slicing states it off, because
the portal may give one pod several shares. DRA pools have no device plugin: nothing to render.
"""

from __future__ import annotations

from gpu.vocabulary import DEVICE_PLUGIN, DRA, EXCLUSIVE, MIG, MPS, REPLICATED, TIME_SLICING

from .devices import GPU
from .errors import RenderError
from .spec import PoolProfile

SHARING_KEY = {TIME_SLICING: "timeSlicing", MPS: "mps"}


def build_device_plugin_config(pool: PoolProfile, *, scheduling_model: str = DEVICE_PLUGIN) -> dict | None:
    """The config for the pool's nodes as a dict (YAML-ready), or None for a DRA pool."""
    if scheduling_model == DRA:
        return None
    if pool.sharing_mode == MIG:
        return {"version": "v1", "flags": {"migStrategy": pool.mig_strategy}}
    if pool.sharing_mode == EXCLUSIVE:
        return {"version": "v1", "flags": {"migStrategy": "none"}}
    if pool.sharing_mode not in REPLICATED:
        raise RenderError(f"Pool {pool.name} has an unknown sharing mode {pool.sharing_mode!r}.")
    if not pool.time_slicing_replicas or pool.time_slicing_replicas < 2:
        raise RenderError(f"Pool {pool.name} shares GPUs as {pool.sharing_mode} but declares no replicas (2 or more).")
    sharing = {
        "renameByDefault": bool(pool.time_slicing_renamed),
        "failRequestsGreaterThanOne": pool.sharing_mode == MPS,
        "resources": [{"name": GPU, "replicas": int(pool.time_slicing_replicas)}],
    }
    return {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": {SHARING_KEY[pool.sharing_mode]: sharing}}

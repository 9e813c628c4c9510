"""The DCGM exporter's metric and label names, and the PromQL the portal asks Prometheus (pure: strings out).

Names as NVIDIA/dcgm-exporter 4.5.3-4.8.2 (commit d5e5f510, 2026-05-12) writes them:
- `etc/default-counters.csv`: DCGM_FI_DEV_GPU_UTIL (gauge, %), DCGM_FI_PROF_GR_ENGINE_ACTIVE (gauge, ratio 0-1),
  DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE (gauges, MiB);
- `internal/pkg/rendermetrics/render_metrics.go` (the text template): every sample carries `gpu`, `UUID`,
  `pci_bus_id`, `device`, `modelName`, and `GPU_I_PROFILE` / `GPU_I_ID` on a MIG device, whose FB_USED/FB_FREE
  are then the slice's own memory;
- `internal/pkg/transformation/const.go`: the Kubernetes mapper adds `pod`, `namespace` and `container` of the
  pod the device is allocated to (the older `pod_name`/`pod_namespace` only with --use-old-namespace).
"""
from __future__ import annotations

import re

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"

POD_LABEL = "pod"
NAMESPACE_LABEL = "namespace"
MIG_PROFILE_LABEL = "GPU_I_PROFILE"


def _regex_literal(values: list[str]) -> str:
    """A PromQL string holding an anchored alternation of exactly these values (Prometheus anchors =~)."""
    regex = "|".join(re.escape(v) for v in sorted(set(values)))
    return '"' + regex.replace("\\", "\\\\").replace('"', '\\"') + '"'


def pod_selector(namespaces: list[str], pods: list[str]) -> str:
    """A label matcher for these pods of these namespaces."""
    return f"{{{NAMESPACE_LABEL}=~{_regex_literal(namespaces)},{POD_LABEL}=~{_regex_literal(pods)}}}"


def utilisation_queries(selector: str, step_seconds: int) -> dict[str, str]:
    """Per pod and evaluation step: the busiest device's utilisation in percent (max over the step, so a burst
    between steps is never missed) and its average. The profiling metric is preferred where the exporter has it
    (it measures the engine, not "a kernel ran"); `or` falls back to DCGM_FI_DEV_GPU_UTIL per pod."""
    by = f"by ({NAMESPACE_LABEL}, {POD_LABEL})"
    window = f"[{step_seconds}s]"

    def per_pod(fn: str) -> str:
        return (f"max {by} ({fn}({GR_ENGINE_ACTIVE}{selector}{window}) * 100)"
                f" or max {by} ({fn}({GPU_UTIL}{selector}{window}))")
    return {
        "peak": per_pod("max_over_time"),
        "mean": per_pod("avg_over_time"),
        "memory_used": f"max {by} (max_over_time({FB_USED}{selector}{window}))",
        "memory_total": f"max {by} ({FB_USED}{selector} + {FB_FREE}{selector})",
    }

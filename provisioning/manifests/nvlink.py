"""Multi-node NVLink (GB200/GB300 NVL72): a ComputeDomain per request and its IMEX channel claim.

Cross-node GPU memory on an NVLink fabric goes through IMEX channels, which the NVIDIA DRA driver hands out per
ComputeDomain (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1: CRD
`deployments/helm/dra-driver-nvidia-gpu/crds/resource.nvidia.com_computedomains.yaml`, README "ComputeDomains",
`templates/compute-domain-*.tmpl.yaml`). The ComputeDomain names a ResourceClaimTemplate that its controller
creates in the namespace; every pod references that template (one channel claim per pod) next to its GPUs, which
may come from the device plugin or DRA. Pods of one ComputeDomain reach each other over NVLink and nothing outside
it, so a domain of its own is also the tenant boundary of IMEX.

When: the pool's GPU model has multi-node NVLink and the pool is on a fabric (its clique), and either the request is
a multi-pod gang (its ranks span nodes of one NVLink domain) or it asks for tenant-exclusive fabric isolation. The
pods are then kept inside one `nvidia.com/gpu.clique` (affinity.py). The decision's `compute_domain` reason
(intake/decisions/multinode.py) uses the same rule.
"""

from __future__ import annotations

from .context import RenderContext
from .devices import GpuPlacement
from .names import child_name

API_VERSION = "resource.nvidia.com/v1beta1"
IMEX_CLAIM = "imex"  # pod-level claim entry of the IMEX channel
# The DeviceClass the channel template's one request names (driver v0.4.1
# `templates/deviceclass-compute-domain-default-channel.yaml`, `compute-domain-workload-claim-template.tmpl.yaml`).
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"


def compute_domain_needed(ctx: RenderContext) -> bool:
    pool = ctx.cluster.pool
    if not (pool.multinode_nvlink and pool.nvlink_domain):
        return False
    return ctx.request.gang is not None or ctx.request.fabric_isolation == "tenant_exclusive"


def channel_template_name(ctx: RenderContext) -> str:
    return child_name(ctx.base, "imex")


def build_compute_domain(ctx: RenderContext) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "ComputeDomain",
        "metadata": ctx.metadata(child_name(ctx.base, "cd")),
        "spec": {
            # 0 with IMEXDaemonsWithDNSNames (beta, on in v0.4): daemons start as pods arrive.
            "numNodes": 0,
            "channel": {"resourceClaimTemplate": {"name": channel_template_name(ctx)}},
        },
    }


def add_imex_channel(ctx: RenderContext, placement: GpuPlacement) -> None:
    """Give the pods the request's ComputeDomain and its channel claim, when the request needs one."""
    if not compute_domain_needed(ctx):
        return
    placement.objects.append(build_compute_domain(ctx))
    placement.pod_claims.append({"name": IMEX_CLAIM, "resourceClaimTemplateName": channel_template_name(ctx)})
    placement.container_claims.append({"name": IMEX_CLAIM})

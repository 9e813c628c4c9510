"""Kubernetes I/O: connections, error classification, server-side apply and the reads of live-cluster state.

Nothing here knows about Django models; callers pass a `ClusterConnection` built from plain values.
"""
from provisioning.kube.apply import KubernetesApplier
from provisioning.kube.client import ClusterConnection, KubeClient, api_client, format_label_selector
from provisioning.kube.errors import KubeError, PermanentKubeError, TransientKubeError, kube_call, kube_errors

__all__ = [
    "ClusterConnection",
    "KubeClient",
    "KubeError",
    "KubernetesApplier",
    "PermanentKubeError",
    "TransientKubeError",
    "api_client",
    "format_label_selector",
    "kube_call",
    "kube_errors",
]

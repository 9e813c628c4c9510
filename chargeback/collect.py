"""Reading a cluster's portal pods over the Kubernetes API, through the shared client (provisioning.kube)."""
from __future__ import annotations

from provisioning.kube.client import KubeClient
from provisioning.kube.reads import list_pods
from provisioning.contract import MANAGED_BY, MANAGED_BY_KEY
from provisioning.kube.connection import cluster_connection


def pods_for_cluster(cluster) -> list[dict]:
    """Every pod the portal manages on the cluster, as the API's JSON (dicts), in one list call."""
    with KubeClient(cluster_connection(cluster)) as kube:
        return list_pods(kube, label_selector=f"{MANAGED_BY_KEY}={MANAGED_BY}")

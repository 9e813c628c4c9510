"""Choose the applier for a cluster from plain values; the Django side reads them off the Cluster row."""
from __future__ import annotations

import os

from provisioning.appliers.base import Applier
from provisioning.appliers.gitops import DEFAULT_AUTHOR, GitOpsApplier, request_label
from provisioning.contract import DEFAULT_LABEL_DOMAIN
from provisioning.kube.apply import KubernetesApplier
from provisioning.kube.client import ClusterConnection

KUBERNETES = "kubernetes"  # the values of provisioning.choices.Applier
GITOPS = "gitops"


def applier_for(
    applier: str,
    *,
    cluster_name: str,
    connection: ClusterConnection | None = None,
    gitops_repo: str | os.PathLike[str] = "",
    author: str = DEFAULT_AUTHOR,
    label_domain: str = DEFAULT_LABEL_DOMAIN,
) -> Applier:
    """`applier` is "kubernetes" (needs `connection`) or "gitops" (needs `gitops_repo`)."""
    if applier == KUBERNETES:
        if connection is None:
            raise ValueError(f"cluster {cluster_name}: the kubernetes applier needs a connection")
        return KubernetesApplier(connection, label_domain=label_domain)
    if applier == GITOPS:
        if not gitops_repo:
            raise ValueError(f"cluster {cluster_name}: the gitops applier needs a repository path")
        return GitOpsApplier(gitops_repo, cluster_name, author, request_label=request_label(label_domain))
    raise ValueError(f"cluster {cluster_name}: unknown applier {applier!r}")

"""applier_for picks the implementation from the cluster's plain settings."""
from __future__ import annotations

import pytest

from provisioning.appliers.factory import applier_for
from provisioning.appliers.gitops import GitOpsApplier
from provisioning.kube.apply import KubernetesApplier
from provisioning.kube.client import ClusterConnection


def test_kubernetes_applier_for_a_connection():
    connection = ClusterConnection(server="https://k8s.example:6443", token="t")

    applier = applier_for("kubernetes", cluster_name="east", connection=connection)

    assert isinstance(applier, KubernetesApplier)
    assert applier.connection is connection


def test_gitops_applier_with_the_label_domain(tmp_path):
    applier = applier_for("gitops", cluster_name="east", gitops_repo=tmp_path / "repo", label_domain="gpu.example.com")

    assert isinstance(applier, GitOpsApplier)
    assert (applier.repo_path, applier.cluster_name) == (tmp_path / "repo", "east")
    assert applier.request_label == "gpu.example.com/request-id"


@pytest.mark.parametrize(
    ("applier", "kwargs", "message"),
    [
        ("kubernetes", {}, "needs a connection"),
        ("gitops", {}, "needs a repository path"),
        ("argo", {}, "unknown applier"),
    ],
)
def test_missing_settings_are_reported(applier, kwargs, message):
    with pytest.raises(ValueError, match=message):
        applier_for(applier, cluster_name="east", **kwargs)

"""`declare_clusters`: clusters and pools from a file or the demo's, idempotent, errors that say what to fix."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from provisioning.demo import CLUSTERS
from provisioning.models import Cluster, NodePool

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("declare_clusters", *args, stdout=out)
    return out.getvalue()


def test_the_demo_clusters_twice_give_the_same_rows():
    run("--demo")
    out = run("--demo")
    assert sorted(Cluster.objects.values_list("name", flat=True)) == sorted(c["name"] for c in CLUSTERS)
    assert NodePool.objects.count() == sum(len(c["pools"]) for c in CLUSTERS)
    assert "cluster gpu-east declared: 4 pools" in out


def test_a_yaml_file_declares_and_updates_pools_by_name(tmp_path):
    path = tmp_path / "clusters.yaml"
    path.write_text("clusters:\n- name: lab\n  kubernetes_version: '1.36'\n  pools:\n"
                    "  - {name: l40s, gpu_model: L40S-48GB, node_count: 1, gpus_per_node: 4}\n")
    run(str(path))
    path.write_text(path.read_text().replace("node_count: 1", "node_count: 3"))
    run(str(path))
    pool = NodePool.objects.get(cluster__name="lab")
    assert (pool.name, pool.node_count, pool.cluster.kubernetes_version) == ("l40s", 3, "1.36")


@pytest.mark.parametrize("content, message", [
    ([{"name": "lab", "pools": [{"name": "x", "gpu_model": "NOPE-1GB"}]}], "catalogue"),
    ([{"name": "lab", "pools": [{"name": "x", "gpu_model": "L40S-48GB", "sharing_mode": "mig"}]}], "mig_layout"),
    ([{"pools": []}], "expected a list of clusters"),
    ({"clusters": "lab"}, "expected a list of clusters"),
])
def test_bad_files_are_refused_with_the_reason(tmp_path, content, message):
    path = tmp_path / "clusters.json"
    path.write_text(json.dumps(content))
    with pytest.raises(CommandError, match=message):
        run(str(path))
    assert not NodePool.objects.exists()


def test_a_file_or_demo_is_required():
    with pytest.raises(CommandError, match="a file or --demo"):
        run()

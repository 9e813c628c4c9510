"""Every kind of object the portal renders passes `kubectl apply --dry-run=server` against kubesim (one object of
each apiVersion/kind found across the rendering matrix, on a simulated cluster of its Kubernetes minor), and an
invalid object is refused with 422 naming the field, as a real API server refuses it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubesim.runner import write_kubeconfig
from provisioning.manifests import render_all
from provisioning.manifests.errors import RenderError
from provisioning.manifests.admission import build_admission_check, build_cluster_queue_check

from ..provisioning.manifests.matrix import cases

pytestmark = pytest.mark.slow

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def kinds_by_minor() -> dict[str, list[dict]]:
    """minor -> one rendered object of each (apiVersion, kind), Namespaces first."""
    found: dict[str, dict[tuple[str, str], dict]] = {}
    for case in cases():
        minor = case.cluster.kubernetes_version
        try:
            objects = render_all(case.team, case.request, case.cluster)
        except RenderError:  # the matrix's impossible combinations (no native gang on 1.34)
            continue
        for obj in objects:
            found.setdefault(minor, {}).setdefault((obj["apiVersion"], obj["kind"]), obj)
    admission = [build_admission_check({}), build_cluster_queue_check("gpu-portal", {})]
    for minor in found:
        for obj in admission:
            found[minor].setdefault((obj["apiVersion"], obj["kind"]), obj)
    return {minor: sorted(objs.values(), key=lambda o: o["kind"] != "Namespace") for minor, objs in found.items()}


KINDS = kinds_by_minor()


def run(kubeconfig: Path, cache: Path, *args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), *args],
                          input=stdin, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("minor", sorted(KINDS))
def test_every_rendered_kind_passes_a_server_dry_run(minor, start_fake_kube, tmp_path):
    fake = start_fake_kube(git_version=f"v{minor}.0")
    kubeconfig = write_kubeconfig(fake, directory=tmp_path, name="sim")
    namespaces = [o for o in KINDS[minor] if o["kind"] == "Namespace"]
    others = [o for o in KINDS[minor] if o["kind"] != "Namespace"]
    for ns in {o["metadata"].get("namespace") for o in others} - {None}:  # dry runs need a real namespace
        fake.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    body = "\n---\n".join(json.dumps(obj) for obj in namespaces + others)  # a stream, as kubectl users write
    done = run(kubeconfig, tmp_path / "cache", "apply", "--dry-run=server", "-f", "-", stdin=body)

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(server dry run)") == len(KINDS[minor])
    assert len(KINDS[minor]) >= 12  # Namespace, quota, workloads, gang and queue objects, claims, policies
    kinds = {o["kind"] for o in KINDS[minor]}
    assert {"Namespace", "ResourceQuota", "Job", "Deployment", "LocalQueue", "AdmissionCheck"} <= kinds


def test_an_invalid_object_is_refused_with_422_naming_the_field(start_fake_kube, tmp_path):
    fake = start_fake_kube()
    kubeconfig = write_kubeconfig(fake, directory=tmp_path, name="sim")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad", "namespace": "default"},
           "spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [
               {"name": "main", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": "1"},
                                                                  "limits": {"nvidia.com/gpu": "2"}}}]}}}}

    done = run(kubeconfig, tmp_path / "cache", "apply", "--dry-run=server", "-f", "-", stdin=json.dumps(job))

    assert done.returncode != 0
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always"' in done.stderr
    assert "spec.template.spec.containers[0].resources.requests" in done.stderr
    refused = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/jobs")]
    assert refused and fake.get("batch/v1", "Job", "bad", "default") is None


def test_unknown_fields_are_refused_under_strict_validation(start_fake_kube, tmp_path):
    fake = start_fake_kube()
    kubeconfig = write_kubeconfig(fake, directory=tmp_path, name="sim")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "typo", "namespace": "default"},
           "spec": {"paralelism": 2, "template": {"spec": {"restartPolicy": "Never",
                                                           "containers": [{"name": "main", "image": "busybox"}]}}}}

    done = run(kubeconfig, tmp_path / "cache", "apply", "-f", "-", stdin=json.dumps(job))

    assert done.returncode != 0 and 'unknown field "spec.paralelism"' in done.stderr
    assert fake.get("batch/v1", "Job", "typo", "default") is None

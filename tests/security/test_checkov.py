"""Given the rendered objects (one sample per workload class x sharing strategy from the manifest matrix, team
objects included) and the portal's chart (defaults and every option on), when checkov scans them, then every
failed check is one of the accepted findings (tests/security/accepted.py) and every accepted finding still
occurs. checkov is installed into its own virtualenv on first use (scripts/scan-venv)."""
from __future__ import annotations

import pytest

from deploy.helmlite import render_objects
from provisioning.manifests import render_all
from tests.provisioning.manifests.matrix import cases

from .accepted import ACCEPTED_CHART, ACCEPTED_WORKLOADS
from .scanner import ROOT, resource_id, scan

pytestmark = pytest.mark.slow

CHART = ROOT / "deploy" / "helm" / "gpu-portal"
STRATEGIES = ("whole_gpu", "mig_mixed", "ts_renamed")
SHAPES = ("training_gang", "inference", "development")
# Volcano gangs on 1.36, with the cluster declaring its ingress controller and scraper (every team policy).
CASE = "{strategy}-device_plugin-volcano-1.36-{shape}-exclusive_clique_driver"
CLASS_LABEL = "gpu-portal.example.com/workload-class"


def samples() -> dict[str, list[dict]]:
    by_id = {case.id: case for case in cases()}
    found = {}
    for strategy in STRATEGIES:
        for shape in SHAPES:
            case = by_id[CASE.format(strategy=strategy, shape=shape)]
            found[f"{strategy}-{shape}"] = render_all(case.team, case.request, case.cluster)
    return found


def chart_documents() -> dict[str, list[dict]]:
    all_on = {"ingress": {"enabled": True, "className": "nginx", "tlsSecretName": "portal-tls"},
              "worker": {"persistence": {"existingClaim": "portal-data"}}}
    return {name: render_objects(CHART, values, release_name="portal", namespace="gpu-portal")
            for name, values in (("chart-defaults", {}), ("chart-all-on", all_on))}


def report(findings, accepted) -> str:
    unexpected = [f for f in findings if f.key not in accepted]
    lines = [f"{f.check_id} {f.check_name} on {f.resource} ({f.subject})" for f in unexpected]
    gone = sorted(set(accepted) - {f.key for f in findings})
    lines += [f"accepted but no longer found, drop it from tests/security/accepted.py: {key}" for key in gone]
    return "\n".join(lines)


def check_against(result, documents, accepted):
    assert result.parsing_errors == 0
    pods = {resource_id(o) for objects in documents.values() for o in objects if o["kind"] in ("Deployment", "Job")}
    assert pods and pods <= result.scanned  # every workload was really checked
    assert result.passed > 0 and result.failed == len(result.findings)
    assert result.keys() == set(accepted), report(result.findings, accepted)


def test_rendered_workloads_have_no_finding_outside_the_accepted_list(tmp_path):
    documents = samples()
    assert {o["metadata"]["labels"].get(CLASS_LABEL) for objects in documents.values() for o in objects
            if o["kind"] in ("Job", "Deployment")} == {"training", "inference", "development"}
    result = scan(documents, tmp_path,
                  lambda obj: obj["metadata"].get("labels", {}).get(CLASS_LABEL, obj["kind"].lower()))
    check_against(result, documents, ACCEPTED_WORKLOADS)


def test_the_chart_has_no_finding_outside_the_accepted_list(tmp_path):
    documents = chart_documents()
    result = scan(documents, tmp_path,
                  lambda obj: obj["metadata"].get("labels", {}).get("app.kubernetes.io/component",
                                                                    obj["kind"].lower()))
    check_against(result, documents, ACCEPTED_CHART)


def test_every_accepted_finding_is_explained_in_the_docs():
    page = (ROOT / "docs" / "network-isolation.md").read_text()
    for check_id, subject in {**ACCEPTED_WORKLOADS, **ACCEPTED_CHART}:
        assert check_id in page, f"{check_id} ({subject}) is accepted but docs/network-isolation.md does not say why"

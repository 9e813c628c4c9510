"""Golden tests: a few representative requests, rendered with render_all, must equal the JSON pinned under
golden/. A change to the output is then a reviewed diff of those files.

Regenerate after an intended change:  UPDATE_GOLDEN=1 pytest tests/provisioning/manifests/test_golden.py
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from provisioning.manifests import render_all, validate_objects

from .matrix import cases

GOLDEN_DIR = Path(__file__).parent / "golden"
CASES = {case.id: case for case in cases()}
GOLDENS = {
    # name: (matrix case, fixed request id and name so the files do not depend on matrix order)
    "h200-mig-inference-device-plugin": ("mig_mixed-device_plugin-none-1.35-inference-plain", 101, "llama-serve"),
    "dra-whole-gpu-training-native-gang-1.36": ("whole_gpu-dra-native-1.36-training_gang-plain", 102, "llm-pretrain"),
    "time-sliced-development": ("ts_renamed-device_plugin-none-1.34-development-plain", 103, "notebook"),
    "kai-training-tenant-exclusive-driver-floor": (
        "whole_gpu-device_plugin-kai-1.37-training_gang-exclusive_clique_driver",
        104,
        "secure-finetune",
    ),
    "kueue-dra-mig-training-1.37": ("mig_mixed-dra-kueue-1.37-training_gang-plain", 105, "mig-sweep"),
    "kueue-dra-time-sliced-inference-driver-floor-1.36": (
        "ts_renamed-dra-kueue-1.36-inference-shared_driver", 106, "shared-serve"
    ),
}


def _render(name):
    case_id, request_id, request_name = GOLDENS[name]
    case = CASES[case_id]
    request = replace(case.request, request_id=request_id, name=request_name)
    return render_all(case.team, request, case.cluster), case.cluster.kubernetes_version


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_render_matches_golden(name):
    objects, version = _render(name)
    validate_objects(objects, version)
    path = GOLDEN_DIR / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(objects, indent=2, sort_keys=False) + "\n")
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 to create it"
    expected = json.loads(path.read_text())
    assert objects == expected, f"{name} differs from {path.name}; if intended, regenerate with UPDATE_GOLDEN=1"


def test_golden_files_are_all_pinned_by_a_test():
    assert {p.stem for p in GOLDEN_DIR.glob("*.json")} == set(GOLDENS)

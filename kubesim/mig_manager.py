"""The simulated GPU Operator mig-manager: a node whose `nvidia.com/mig.config` names another layout than the one
applied goes `nvidia.com/mig.config.state=pending`, and after the scaled reconfiguration delay `success` with the
new MIG devices advertised and labelled (GPU Operator mig-manager; reference §3). Run by `kubesim.kubelet`'s tick."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubesim import nodes as node_builders
from kubesim.scenario import Scenario
from kubesim.timestamps import moment_of, stamp

MIG_CONFIG, MIG_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
# The simulator's own bookkeeping on MIG nodes (a real mig-manager keeps it in its own memory).
APPLIED_LAYOUT = "kubesim.gpu-portal.io/applied-mig-config"
RECONFIGURE_STARTED = "kubesim.gpu-portal.io/mig-reconfigure-started"
MODEL_ANNOTATION = "kubesim.gpu-portal.io/gpu-model"


def step(fake, scenario: Scenario, now: float) -> None:
    for node in fake.find("v1", "Node"):
        meta = node["metadata"]
        annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
        applied, wanted = annotations.get(APPLIED_LAYOUT), labels.get(MIG_CONFIG)
        if applied is None or not wanted or wanted == applied:
            continue
        started = moment_of(annotations.get(RECONFIGURE_STARTED))
        if labels.get(MIG_STATE) != "pending" or started is None:
            fake.patch("v1", "Node", meta["name"], None, {
                "metadata": {"labels": {MIG_STATE: "pending"}, "annotations": {RECONFIGURE_STARTED: stamp(now)}}})
            continue
        gpus = int(labels.get("nvidia.com/gpu.count", "8"))
        if now - started >= scenario.mig_delay(gpus):
            _apply_layout(fake, node, annotations.get(MODEL_ANNOTATION, ""), wanted, gpus)


def _apply_layout(fake, node: Mapping[str, Any], model: str, layout: str, gpus: int) -> None:
    """Advertise and label what the layout creates (mixed strategy), as mig-manager, the device plugin and GFD
    do once the GPUs are reconfigured."""
    labels = {k: v for k, v in node["metadata"]["labels"].items() if not k.startswith("nvidia.com/mig-")}
    advertised = {k: v for k, v in node["status"]["allocatable"].items()
                   if not k.startswith("nvidia.com/mig-") and k != "nvidia.com/gpu"}
    resources = node_builders.mig_resources(model, layout, gpus)
    if resources:
        labels |= node_builders.mig_labels(model, layout, gpus, "success")
    else:  # a layout without MIG devices (all-disabled): whole GPUs again
        resources = {"nvidia.com/gpu": gpus}
        labels |= {MIG_CONFIG: layout, MIG_STATE: "success", "nvidia.com/gpu.replicas": "1"}
    advertised |= {k: str(v) for k, v in resources.items()}
    replacement = json.loads(json.dumps(node))
    replacement["metadata"]["labels"] = labels
    replacement["metadata"]["annotations"] = {
        k: v for k, v in node["metadata"]["annotations"].items() if k != RECONFIGURE_STARTED} | {
        APPLIED_LAYOUT: layout}
    replacement["status"]["allocatable"] = advertised
    replacement["status"]["capacity"] = dict(advertised)
    fake.put(replacement)

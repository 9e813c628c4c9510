"""The cluster-object contract (provisioning/contract.py): one module spells the portal's label and annotation
keys and decides which request a cluster object counts for; the renderer, reconciliation, metering and discovery
read a pod the same way through it. And GPU equivalents are worked out once (gpu/equivalents.py)."""
from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import pytest

from chargeback.ingest import expected_equivalents, pod_usage
from chargeback.synthetic import synthetic_pod
from gpu.catalogue import load_catalogue
from gpu.equivalents import gpu_equivalents
from kubesim import nodes as k
from provisioning import contract
from provisioning.discovery import parse_pods
from provisioning.discovery.capacity import equivalents_per_unit
from provisioning.reconcile.facts import request_id_of

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = "gpu.example.com"
# A key of the contract written out as a string: the domain's form or the tail of an f-string (f"{d}/team").
_KEY = re.compile(r"^(gpu-portal\.io)?/(request-id|gpu-equivalents|gpu-model|devices|mig-profile|workload-class|"
                  r"cost-center|team|cluster|strategy|pool|owner|checkpoint-grace-seconds)$|^app\.kubernetes\.io/managed-by$")
# The contract itself; Backstage's catalog annotations are another system's entity, written by intake (below
# provisioning), which shares only the domain's spelling.
EXEMPT = {"provisioning/contract.py", "intake/backstage.py"}


def _pod(**overrides) -> dict:
    values = dict(uid="u-1", name="train-abc12", namespace="team-a", label_domain=DOMAIN, request_id=42,
                  team="team-a", cluster="gpu-east", strategy="mig", gpu_model="H200-141GB", devices=1,
                  equivalents="0.142857", started_at=datetime(2026, 11, 2, tzinfo=UTC), mig_profile="1g.18gb")
    return synthetic_pod(**{**values, **overrides})


def test_no_product_module_spells_a_key_of_the_contract():
    found = []
    for top in ("gpu", "portal", "intake", "provisioning", "chargeback", "register", "workflows", "demo", "kubesim"):
        for path in sorted((ROOT / top).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            if where in EXEMPT or "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and _KEY.match(node.value):
                    found.append(f"{where}:{node.lineno}: {node.value!r}")
    assert not found, "\n".join(found)


def test_identity_is_what_the_labels_claim_and_binding_needs_the_portals_mark():
    identity = contract.pod_identity(_pod(), DOMAIN)

    assert (identity.request_id, identity.team, identity.cluster, identity.strategy) == (42, "team-a", "gpu-east",
                                                                                         "mig")
    assert identity.managed and contract.bound_request_id(identity) == 42
    unmarked = _pod()
    del unmarked["metadata"]["labels"][contract.MANAGED_BY_KEY]
    copied = contract.pod_identity(unmarked, DOMAIN)
    assert contract.bound_request_id(copied) is None and contract.attributed_request_id(copied) == 42


@pytest.mark.parametrize("value", ["0", "-3", "4x", "", "٣"])
def test_a_request_id_label_that_is_not_a_request_number_claims_nothing(value):
    pod = _pod()
    pod["metadata"]["labels"][contract.domain_key(DOMAIN, contract.REQUEST_ID)] = value
    assert contract.pod_identity(pod, DOMAIN).request_id is None


def test_owner_references_come_with_the_claim():
    pod = _pod()
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j-1"}]
    assert contract.pod_identity(pod, DOMAIN).owners == (contract.OwnerRef(kind="Job", name="train", uid="j-1"),)


def test_reconciliation_metering_and_discovery_read_one_pod_alike():
    labelled = k.gpu_pod("train-0", node="gpu-h100-1", resources={"nvidia.com/gpu": 8}, request_id=7, team="team-b")
    unlabelled = k.gpu_pod("other-0", node="gpu-h100-1", resources={"nvidia.com/gpu": 8})

    assert request_id_of(labelled, contract.DEFAULT_LABEL_DOMAIN) == 7
    assert [(p.request_id, p.team) for p in parse_pods([labelled, unlabelled])] == [(7, "team-b"), (None, "")]
    assert request_id_of(unlabelled, contract.DEFAULT_LABEL_DOMAIN) is None
    usage = pod_usage(_pod(), label_domain=DOMAIN)
    assert (usage.claimed_request_id, usage.team, usage.gpu_model, usage.mig_profile, usage.devices,
            usage.annotated_equivalents) == (42, "team-a", "H200-141GB", "1g.18gb", 1, "0.142857")


def test_times_as_the_api_server_writes_them():
    assert contract.parse_time("2026-11-03T10:00:00Z") == datetime(2026, 11, 3, 10, tzinfo=UTC)
    assert contract.parse_time(None) is None and contract.parse_time("yesterday") is None
    with pytest.raises(ValueError):
        contract.parse_time("yesterday", strict=True)


def test_gpu_equivalents_per_strategy():
    h200 = load_catalogue().model("H200-141GB")
    slice_ = h200.mig.profiles["1g.18gb"]

    assert gpu_equivalents("whole_gpu", 8) == 8
    assert gpu_equivalents("mig", 2, mig=h200.mig, profile=slice_) == Fraction(2, 7)
    assert gpu_equivalents("time_slicing", 1, replicas=4) == gpu_equivalents("mps", 1, replicas=4) == Fraction(1, 4)
    assert gpu_equivalents("mig", 1, mig=h200.mig) is None and gpu_equivalents("mps", 1) is None
    assert gpu_equivalents("sharing", 1) is None


def test_metering_and_capacity_count_a_slice_as_the_decision_does():
    catalogue = load_catalogue()
    h200 = catalogue.model("H200-141GB")
    decided = gpu_equivalents("mig", 1, mig=h200.mig, profile=h200.mig.profiles["1g.18gb"])

    metered = expected_equivalents(strategy="mig", devices=1, gpu_model="H200-141GB", mig_profile="1g.18gb",
                                   catalogue=catalogue, time_slicing_replicas=None)
    offered = equivalents_per_unit("nvidia.com/mig-1g.18gb", sharing_mode="mig", model=h200, replicas=None)

    assert decided == metered == offered == Fraction(1, 7)


def _owned(namespace: str, uid: str, *refs: tuple[str, str, str, bool]) -> contract.Identity:
    obj = {"metadata": {"namespace": namespace, "name": f"o-{uid}", "uid": uid, "ownerReferences": [
        {"kind": kind, "name": name, "uid": ref_uid, "controller": controller} for kind, name, ref_uid, controller in refs]}}
    return contract.pod_identity(obj, DOMAIN)


def test_a_pod_is_billed_as_a_request_only_through_its_controllers_up_to_what_the_portal_applied():
    applied = {"dep-1": contract.AppliedOwner(request_id=7, kind="Deployment", namespace="gpu-a")}
    replica_set = _owned("gpu-a", "rs-1", ("Deployment", "serve", "dep-1", True))
    owners = contract.Owners(applied=applied, between={"rs-1": replica_set})
    pod = _owned("gpu-a", "p", ("ReplicaSet", "o-rs-1", "rs-1", True))
    assert contract.applied_request_id(pod, owners) == 7
    # Not the controller, two controllers (invalid), another namespace, a kind other than the one applied, or a
    # link that is not what it names: nothing.
    assert contract.applied_request_id(_owned("gpu-a", "p", ("ReplicaSet", "o-rs-1", "rs-1", False)), owners) is None
    assert contract.applied_request_id(_owned("gpu-a", "p", ("ReplicaSet", "o-rs-1", "rs-1", True),
                                              ("Deployment", "serve", "dep-1", True)), owners) is None
    assert contract.applied_request_id(_owned("gpu-b", "p", ("Deployment", "serve", "dep-1", True)), owners) is None
    assert contract.applied_request_id(_owned("gpu-a", "p", ("Job", "serve", "dep-1", True)), owners) is None
    assert contract.applied_request_id(_owned("gpu-a", "p", ("ReplicaSet", "other", "rs-1", True)), owners) is None
    elsewhere = contract.Owners(applied=applied, between={"rs-1": _owned("gpu-b", "rs-1", ("Deployment", "serve",
                                                                                            "dep-1", True))})
    assert contract.applied_request_id(pod, elsewhere) is None
    # Labels play no part.
    assert contract.applied_request_id(contract.pod_identity(_pod(), DOMAIN), owners) is None

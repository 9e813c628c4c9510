"""Chargeback fixtures: requests with a decision per sharing strategy, and pods built like the API server's."""
from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timezone
from fractions import Fraction

import pytest
from django.conf import settings

from chargeback.synthetic import synthetic_pod
from intake.models import GpuRequest, PolicyVersion
from provisioning.manifests.names import request_base_name, team_namespace
from provisioning.models import AppliedObject, Cluster

_counter = itertools.count(1)


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


POOLS = {  # (strategy, gpu_model) -> (cluster, pool) in the demo inventory
    ("whole_gpu", "H100-80GB"): ("gpu-east", "h100-train"),
    ("mig", "H200-141GB"): ("gpu-east", "h200-mig"),
    ("mig", "A100-80GB"): ("gpu-east", "a100-mig-small"),
    ("time_slicing", "L40S-48GB"): ("gpu-east", "l40s-shared"),
    ("whole_gpu", "B200-180GB"): ("gpu-west", "b200-train"),
}


def make_request(team, user, *, strategy="whole_gpu", gpu_model="H100-80GB", mig_profile=None, gpus=1,
                 name=None) -> GpuRequest:
    cluster, pool = POOLS[(strategy, gpu_model)]
    decision = {"strategy": strategy, "gpu_model": gpu_model, "mig_profile": mig_profile, "cluster": cluster,
                "node_pool": pool, "gpus_per_replica": gpus, "replicas": 1}
    return GpuRequest.objects.create(
        team=team, name=name or f"req-{next(_counter)}", status="running", answers={}, decision=decision,
        policy_version=PolicyVersion.objects.get(status="active"), workload_class="inference", strategy=strategy,
        requested_by=user,
    )


def equivalents_text(value: Fraction) -> str:
    return f"{float(value):.6f}".rstrip("0").rstrip(".") if value.denominator != 1 else str(value.numerator)


def applied_owner(gpu_request) -> tuple[str, str, str, str] | None:
    """The Job the portal applied for this request, as the applier records it (its UID the API server's), so that
    its pods are billed as the request; None when the request's cluster is not declared."""
    cluster = Cluster.objects.filter(name=gpu_request.decision.cluster).first()
    if cluster is None:
        return None
    name = request_base_name(gpu_request.name, gpu_request.pk)
    applied, _ = AppliedObject.objects.get_or_create(
        cluster=cluster, api_version="batch/v1", kind="Job", namespace=team_namespace(gpu_request.team.slug),
        name=name, defaults={"request": gpu_request, "uid": str(uuid.uuid4()), "applied_at": datetime.now(timezone.utc)})
    return "batch/v1", "Job", name, applied.uid


def pod_for(gpu_request, *, started_at, finished_at=None, uid=None, equivalents=None, devices=None, **extra) -> dict:
    """A pod of this request as the renderer labels it; `equivalents` overrides the annotation."""
    d = gpu_request.decision
    devices = devices or d.gpus_per_replica
    if equivalents is None:
        from chargeback.ingest import expected_equivalents
        from gpu.catalogue import load_catalogue

        exact = expected_equivalents(strategy=d.strategy, devices=devices, gpu_model=d.gpu_model,
                                     mig_profile=d.mig_profile or "", catalogue=load_catalogue(),
                                     time_slicing_replicas=4)
        equivalents = equivalents_text(exact)
    uid = uid or str(uuid.uuid4())
    extra.setdefault("owner", applied_owner(gpu_request))
    return synthetic_pod(
        uid=uid, name=f"{gpu_request.name}-{uid[:5]}", namespace=team_namespace(gpu_request.team.slug),
        label_domain=settings.PORTAL_LABEL_DOMAIN, request_id=gpu_request.pk, team=gpu_request.team.slug,
        cluster=d.cluster, strategy=d.strategy, gpu_model=d.gpu_model, devices=devices,
        equivalents=equivalents, mig_profile=d.mig_profile or "", started_at=started_at, finished_at=finished_at,
        **extra,
    )


@pytest.fixture
def requests_a(inventory, team_a, engineer):
    """Team A's requests, one per strategy and model the scenarios need."""
    return {
        "whole": make_request(team_a, engineer, strategy="whole_gpu", gpu_model="H100-80GB", gpus=2, name="train"),
        "h200_1g": make_request(team_a, engineer, strategy="mig", gpu_model="H200-141GB", mig_profile="1g.18gb",
                                name="h200-small"),
        "h200_3g": make_request(team_a, engineer, strategy="mig", gpu_model="H200-141GB", mig_profile="3g.71gb",
                                name="h200-medium"),
        "a100_1g": make_request(team_a, engineer, strategy="mig", gpu_model="A100-80GB", mig_profile="1g.10gb",
                                name="a100-small"),
        "a100_3g": make_request(team_a, engineer, strategy="mig", gpu_model="A100-80GB", mig_profile="3g.40gb",
                                name="a100-medium"),
        "ts": make_request(team_a, engineer, strategy="time_slicing", gpu_model="L40S-48GB", name="notebook"),
    }

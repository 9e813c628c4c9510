"""Requests "found in the cluster": work applied straight into a team's Kueue queue (with kubectl, say) that the
portal's admission check holds (docs/admission-check.md). Its answers are read off the pod template, the decision
is computed by the same `decide()` as for any request, and it waits in the approval queue like any other -- never
approved automatically, since nobody asked the portal first.

`answers_from_pod_sets` is pure; `request_found_in_cluster` is the write.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from portal.errors import DomainError
from portal.models import Team
from gpu.catalogue import Catalogue

from . import events, hooks
from .choices import RequestOrigin, RequestStatus
from .decisions import REVIEW, Decision, summarise
from .models import GpuRequest
from .services import request_evaluate

GPU = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# Whom found requests are "requested by": nobody signs in as it (inactive, no password), and since it is nobody on
# the platform team, any platform engineer may approve them.
CLUSTER_USER = "gpu-portal-cluster"
TRAINING_OWNERS = {"Job", "JobSet", "PyTorchJob", "MPIJob", "TFJob", "JAXJob", "RayJob"}
SERVING_OWNERS = {"Deployment", "StatefulSet", "LeaderWorkerSet"}


class CannotDecide(DomainError):
    """The pod template says too little (or something the questionnaire cannot express) for a decision."""


@dataclass(frozen=True)
class FoundAnswers:
    answers: dict[str, Any]
    notes: list[str]  # what was read and what was assumed, in words, for the request's history


def _units(value: Any) -> int:
    """Devices one pod asks of one resource, as whole units for the questionnaire (a MIG slice or a shared GPU
    counts as one; an unreadable quantity as one too: the review and the admission go by the exact pod sets)."""
    return value if isinstance(value, int) else 1


def answers_from_pod_sets(*, owner_kind: str, shape: list[Mapping[str, Any]], template: Mapping[str, Any],
                          catalogue: Catalogue, shape_text: str) -> FoundAnswers:
    """The questionnaire's answers for a Workload the portal did not render, from its pod sets (`shape`: count,
    devices and DRA claims per pod, images; `shape_text` says it in words) and its first pod template (node
    selector, command). The answers are as near as the questionnaire can say; what the platform team reviews,
    and what approval admits, is exactly `shape_text`."""
    spec = template.get("spec") or {}
    containers = list(spec.get("containers") or [])
    if not containers:
        raise CannotDecide("The pod template has no containers.")
    per_pod = [sum(_units(v) for v in ps["devices_per_pod"].values()) + len(ps["claims_per_pod"]) for ps in shape]
    gpus = max(per_pod, default=0)
    if gpus < 1:
        raise CannotDecide("No pod asks an accelerator: nothing for the GPU approval to decide.")
    pods = sum(int(ps["count"]) if str(ps["count"]).isascii() and str(ps["count"]).isdigit() else 1 for ps in shape)
    notes = [f"Reviewed as exactly its pod sets, which is what approval admits and nothing else: {shape_text}."]
    inexact = [name for ps in shape for name in ps["devices_per_pod"] if name != GPU] + \
        [claim for ps in shape for claim in ps["claims_per_pod"]]
    if inexact or len(set(per_pod)) > 1 or gpus > 16 or pods > 256:
        notes.append("The questionnaire cannot say this exactly (" + (", ".join(sorted(set(inexact))) or
                     "pod sets of different sizes or beyond its limits") + "): its answers below are the nearest, "
                     "counting each device or DRA claim as one GPU; decide on the pod sets above.")
    product = (spec.get("nodeSelector") or {}).get(GPU_PRODUCT_LABEL, "")
    model = catalogue.model_by_product(product) if product else None
    if model is None:
        model = min(catalogue.models.values(), key=lambda m: (m.memory_gb, m.key))
        notes.append(f"No known {GPU_PRODUCT_LABEL} node selector: GPU memory assumed as {model.memory_gb} GB per "
                     f"GPU (the smallest model the portal knows, {model.key}).")
    else:
        notes.append(f"GPU model from its node selector {GPU_PRODUCT_LABEL}={product}: {model.key}.")
    serving = owner_kind in SERVING_OWNERS
    if owner_kind not in TRAINING_OWNERS | SERVING_OWNERS:
        notes.append(f"A {owner_kind or 'bare pod'} is taken as training (runs to completion).")
    command = [*(containers[0].get("command") or []), *(containers[0].get("args") or [])][:64]
    answers = {
        "workload_class": "inference" if serving else "training",
        # whole GPUs are nobody else's; MIG slices, shared GPUs and DRA devices may be shared
        "tenancy": "multi_tenant" if inexact else "dedicated",
        "latency": "latency_sensitive" if serving else "batch",
        "gpu_memory_gb": model.memory_gb * min(gpus, 16),
        "gpus_per_replica": min(gpus, 16),
        "replicas": max(1, min(pods, 256)),
        "image": containers[0].get("image") or "",
        "command": [str(part)[:4096] for part in command],
    }
    return FoundAnswers(answers=answers, notes=notes)


def cluster_user():
    user, created = get_user_model().objects.get_or_create(username=CLUSTER_USER, defaults={"is_active": False})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _held_for_review(decision: Decision) -> Decision:
    """The decision with automatic approval withdrawn: found work always waits for the platform team."""
    text = f"Found in the cluster, not submitted to the portal: it is never approved automatically. {REVIEW}"
    held = decision.held_for_review(code="FoundInCluster", text=text)
    return dataclasses.replace(held, summary=summarise(held, None))


@transaction.atomic
def request_found_in_cluster(*, team: Team, cluster_name: str, name: str, found: FoundAnswers,
                             where: str) -> GpuRequest:
    """A pending request for work found in the cluster (`where` names it: cluster, namespace, kind and name),
    decided against that cluster's pools only: that is where it already is.
    Raises CannotDecide when the answers cannot be decided (the caller rejects the work, saying why)."""
    snapshot = hooks.inventory_snapshot()
    here = dataclasses.replace(snapshot, clusters=tuple(c for c in snapshot.clusters if c.name == cluster_name))
    try:
        evaluation = request_evaluate(raw_answers=found.answers, team=team, inventory=here)
    except DomainError as exc:
        raise CannotDecide(f"The portal cannot decide it: {exc.message}") from None
    decision = _held_for_review(evaluation.decision)
    try:
        with transaction.atomic():  # a savepoint: a name taken by a live request is not the end of it
            gpu_request = GpuRequest.objects.create(
                team=team, name=name, answers=evaluation.answers.values,
                defaulted_answers=sorted(evaluation.answers.defaulted), decision=decision,
                policy_version=evaluation.policy_version, rule_key=decision.rule or "",
                workload_class=evaluation.answers.values["workload_class"], strategy=decision.strategy,
                requested_by=cluster_user(), origin=RequestOrigin.CLUSTER,
            )
    except IntegrityError:
        raise CannotDecide(f"Team {team.slug} already has a live request named {name}; rename the workload.") from None
    events.event_transition(request=gpu_request, actor=None, from_status="", to_status=RequestStatus.PENDING_APPROVAL,
                            comment=f"Found in the cluster: {where} entered the team's Kueue queue without the "
                                    "portal; its admission check holds it until the platform team decides.")
    events.event_note(request=gpu_request, reason="FoundInCluster", comment=" ".join(found.notes))
    return gpu_request

"""Requests "found in the cluster": work applied straight into a team's Kueue queue (with kubectl, say) that the
portal's admission check holds (docs/admission-check.md). Its answers are read off the pod template, the decision
is computed by the same `decide()` as for any request, and it waits in the approval queue like any other -- never
approved automatically, since nobody asked the portal first.

`answers_from_pod_template` is pure; `request_found_in_cluster` is the write.
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


def _gpus(container: Mapping[str, Any]) -> int:
    resources = container.get("resources") or {}
    value = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(GPU) or 0
    try:
        return int(value)
    except (TypeError, ValueError):
        raise CannotDecide(f"{GPU} is {value!r}, not a whole number of GPUs.") from None


def answers_from_pod_template(*, owner_kind: str, replicas: int, template: Mapping[str, Any],
                              catalogue: Catalogue) -> FoundAnswers:
    """The questionnaire's answers for a workload the portal did not render, from its pod template."""
    spec = template.get("spec") or {}
    containers = list(spec.get("containers") or [])
    if not containers:
        raise CannotDecide("The pod template has no containers.")
    other = sorted({name for c in containers for name in ((c.get("resources") or {}).get("limits") or {})
                    if name.startswith("nvidia.com/") and name != GPU})
    if other:
        raise CannotDecide(f"It asks {', '.join(other)}; the portal decides whole GPUs ({GPU}) of found work only.")
    gpus = max(_gpus(c) for c in containers)
    if gpus < 1:
        raise CannotDecide(f"No container asks {GPU}: nothing for the GPU approval to decide.")
    notes = [f"Read from the pod template: {gpus} {GPU} per pod, {replicas} pod(s), image {containers[0].get('image')}."]
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
        "tenancy": "dedicated",  # whole GPUs: nobody else's work shares them
        "latency": "latency_sensitive" if serving else "batch",
        "gpu_memory_gb": model.memory_gb * gpus,
        "gpus_per_replica": min(gpus, 16),
        "replicas": max(1, min(int(replicas or 1), 256)),
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

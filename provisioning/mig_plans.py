"""MIG layout plans: propose (the pure planner over the last inventory sync), approve, cancel, and execute.

Execution is advanced by a beat-driven Celery task, never by a blocking wait in a worker: each call of
`mig_plan_advance` looks at the plan's current step, makes the next Kubernetes call if one is due, records the
transition and returns. Steps run one node at a time, in plan order, so at most one node's GPUs are out at once:

    pending --cordon--> cordoned --> draining --(GPU pods gone, or drain deadline)--> labelled
    labelled --(mig.config.state pending|rebooting)--> reconfiguring --(success)--> uncordoned --> done
    labelled / reconfiguring --(failed)--> failed;  --(no success before the deadline)--> stuck

- The portal cordons with `spec.unschedulable: true` (reference §11: mig-manager does not drain user work) and
  uncordons only a node it cordoned itself.
- At the drain deadline the label is set even if GPU pods still run; they are listed in the step as interrupted
  (the plan's cost said so). The portal evicts nothing.
- Setting `nvidia.com/mig.config` also removes `nvidia.com/mig.config.state`, so the next `success` is
  mig-manager's answer to this change, not the previous one's.
- `failed` and `stuck` (still pending, or never picked up, past the reconfiguration deadline) end the step and
  fail the plan; the node is left cordoned, with a message saying so, for the platform team to inspect. The
  remaining steps are not started.
- Transient API errors leave the step where it is (the next beat retries); permanent ones fail the step.
"""
from __future__ import annotations

from portal.text import plural

import datetime
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal.errors import Conflict, InvalidInput, PermissionDenied
from portal.dispatch import send_now
from portal.roles import is_platform
from gpu.catalogue import load_catalogue

from . import selectors
from .choices import MIG_PLAN_ACTIVE, MIG_STEP_FINISHED, MIG_STEP_TRANSITIONS, MigPlanStatus, MigStepState
from .kube import inventory_reads
from .kube.client import KubeClient
from .kube.connection import cluster_connection
from .kube.errors import KubeError, TransientKubeError
from .mig_planner import plan_layouts
from .models import Cluster, MigPlan, MigPlanStep, Node

logger = logging.getLogger(__name__)

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"


@dataclass(frozen=True)
class ProposeOutcome:
    plan: MigPlan | None
    message: str


@transaction.atomic
def mig_plan_propose(*, user, cluster: Cluster, now: datetime.datetime | None = None) -> ProposeOutcome:
    """A draft plan for the cluster's unmet MIG demand, from the last inventory sync; None when nothing helps."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team plans MIG layout changes.")
    cluster = Cluster.objects.get(pk=cluster.pk)  # what the last sync wrote, not a caller's stale copy
    if cluster.last_synced_at is None:
        raise InvalidInput(f"{cluster.name} has never been synced: the planner needs its nodes' layouts.",
                           field="cluster")
    now = now or timezone.now()
    demand, nodes = selectors.mig_planner_inputs(cluster=cluster, now=now)
    proposal = plan_layouts(demand, nodes, load_catalogue())
    if not proposal.steps:
        return ProposeOutcome(None, f"{cluster.name}: {proposal.summary}")
    plan = MigPlan.objects.create(
        cluster=cluster, created_by=user, summary=proposal.summary, demand=proposal.demand, unmet=proposal.unmet,
        drain_timeout_seconds=settings.PORTAL_MIG_DRAIN_TIMEOUT_SECONDS,
        reconfigure_timeout_seconds=settings.PORTAL_MIG_RECONFIGURE_TIMEOUT_SECONDS,
    )
    node_ids = dict(Node.objects.filter(cluster=cluster, name__in=[s.node for s in proposal.steps])
                    .values_list("name", "id"))
    MigPlanStep.objects.bulk_create(
        MigPlanStep(
            plan=plan, node_id=node_ids.get(step.node), node_name=step.node, position=index,
            from_config=step.from_config, to_config=step.to_config, gpu_count=step.gpu_count, gains=step.gains,
            estimated_seconds_min=step.estimated_seconds_min, estimated_seconds_max=step.estimated_seconds_max,
            remaining_work_seconds=step.remaining_work_seconds, remaining_work_known=step.remaining_work_known,
            affected_workloads=step.affected,
            log=[{"at": now.isoformat(), "from": "", "to": MigStepState.PENDING,
                  "message": f"Proposed: {step.from_config or 'no layout'} -> {step.to_config}, meets "
                             + ", ".join(f"{n} x {p}" for p, n in step.covers.items()) + "."}],
        )
        for index, step in enumerate(proposal.steps, start=1)
    )  # fmt: skip
    return ProposeOutcome(plan, f"Plan #{plan.pk} for {cluster.name}: {proposal.summary}")


@transaction.atomic
def mig_plan_approve(*, user, plan_id: int) -> MigPlan:
    """Approve a draft; execution starts after commit and is carried on by the beat."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team approves MIG layout changes.")
    plan = MigPlan.objects.select_for_update(no_key=True, of=("self",)).select_related("cluster").get(pk=plan_id)
    if plan.status != MigPlanStatus.DRAFT:
        raise Conflict(f"MIG plan #{plan.pk} is {plan.status}; only a draft can be approved.")
    plan.status, plan.approved_by, plan.approved_at = MigPlanStatus.APPROVED, user, timezone.now()
    try:
        with transaction.atomic():
            plan.save(update_fields=["status", "approved_by", "approved_at", "updated_at"])
    except IntegrityError:
        raise Conflict(f"Another MIG plan is being executed on {plan.cluster.name}; wait for it to finish.") from None
    transaction.on_commit(lambda: dispatch_advance(plan_id=plan.pk))
    return plan


@transaction.atomic
def mig_plan_cancel(*, user, plan_id: int) -> MigPlan:
    """Discard a draft, or stop an approved plan before its first step started."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team cancels MIG plans.")
    plan = MigPlan.objects.select_for_update(no_key=True).get(pk=plan_id)
    started = plan.steps.exclude(state=MigStepState.PENDING).exists()
    if plan.status not in (MigPlanStatus.DRAFT, MigPlanStatus.APPROVED) or started:
        raise Conflict(f"MIG plan #{plan.pk} is {plan.status}; a plan that started changing nodes runs to its end.")
    plan.status, plan.finished_at = MigPlanStatus.CANCELLED, timezone.now()
    plan.message = f"Cancelled by {user.get_username()}."
    plan.save(update_fields=["status", "finished_at", "message", "updated_at"])
    return plan


def dispatch_advance(*, plan_id: int) -> bool:
    return send_now("provisioning.mig_plan_advance", plan_id, what=f"MIG plan {plan_id}")


def _sync_soon(cluster_id: int) -> None:
    send_now("provisioning.inventory_sync", cluster_id, what=f"the inventory sync of cluster {cluster_id}")


def mig_plans_advance_dispatch() -> int:
    """Beat: advance every approved or executing plan."""
    sent = 0
    for plan_id in MigPlan.objects.filter(status__in=MIG_PLAN_ACTIVE).values_list("id", flat=True):
        sent += dispatch_advance(plan_id=plan_id)
    return sent


# --- execution ------------------------------------------------------------------------------------------------


def _transition(step: MigPlanStep, to_state: str, message: str, now: datetime.datetime) -> None:
    if to_state not in MIG_STEP_TRANSITIONS[step.state]:
        raise RuntimeError(f"MIG step {step.pk}: {step.state} -> {to_state} is not an allowed transition")
    step.log = [*step.log, {"at": now.isoformat(), "from": step.state, "to": to_state, "message": message}]
    step.state, step.message, step.state_changed_at = to_state, message, now
    step.started_at = step.started_at or now
    if to_state in MIG_STEP_FINISHED:
        step.finished_at = now
    step.save()


def _wait(step: MigPlanStep, message: str) -> None:
    """Nothing to change yet: say what the step is waiting for (not a transition, so not logged)."""
    if step.message != message:
        step.message = message
        step.save(update_fields=["message"])


def _pod_names(pods: list[dict]) -> str:
    names = [f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in pods]
    return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")


LEFT_CORDONED = ("The node is left cordoned: check mig-manager on it (its logs and nvidia.com/mig.config.state), "
                 "then uncordon it by hand.")


def _advance_step(kube: KubeClient, plan: MigPlan, step: MigPlanStep, now: datetime.datetime) -> None:
    """Move one step as far as it can go now (several transitions when nothing has to be waited for)."""
    node = inventory_reads.get_node(kube, step.node_name)
    labels = node["metadata"].get("labels") or {}
    if step.state == MigStepState.PENDING:
        current = labels.get(MIG_CONFIG, "")
        if current == step.to_config and labels.get(MIG_STATE) == "success":
            _transition(step, MigStepState.DONE, f"{step.node_name} already runs {step.to_config}; nothing to do.", now)
            return
        if current != step.from_config:
            _transition(step, MigStepState.FAILED, f"{step.node_name} now runs {current or 'no layout'}, not "
                                                   f"{step.from_config} as planned; propose a new plan.", now)
            return
        if (node.get("spec") or {}).get("unschedulable"):
            message = f"{step.node_name} was already cordoned (by someone else); it stays cordoned at the end."
        else:
            inventory_reads.patch_node(kube, step.node_name, unschedulable=True)
            step.cordoned_by_portal = True
            message = f"Cordoned {step.node_name}: no new pods are placed on it."
        step.drain_deadline_at = now + datetime.timedelta(seconds=plan.drain_timeout_seconds)
        _transition(step, MigStepState.CORDONED, message, now)
    if step.state == MigStepState.CORDONED:
        _transition(step, MigStepState.DRAINING,
                    f"Waiting for the GPU pods on {step.node_name} to finish, until "
                    f"{step.drain_deadline_at:%Y-%m-%d %H:%M:%S} UTC.", now)
    if step.state == MigStepState.DRAINING:
        pods = list(inventory_reads.iter_gpu_pods(inventory_reads.list_pods_on_node(kube, step.node_name)))
        if pods and now < step.drain_deadline_at:
            _wait(step, f"Waiting for {plural(len(pods), 'GPU pod')} on {step.node_name} to finish (until "
                        f"{step.drain_deadline_at:%Y-%m-%d %H:%M:%S} UTC): {_pod_names(pods)}.")
            return
        inventory_reads.patch_node(kube, step.node_name, labels={MIG_CONFIG: step.to_config, MIG_STATE: None})
        step.reconfigure_deadline_at = now + datetime.timedelta(seconds=plan.reconfigure_timeout_seconds)
        interrupted = (f" The drain deadline passed with {plural(len(pods), 'GPU pod')} still running, interrupted "
                       f"by the reconfiguration: {_pod_names(pods)}.") if pods else " No GPU pod was left on the node."
        _transition(step, MigStepState.LABELLED,
                    f"Set {MIG_CONFIG}={step.to_config} (was {step.from_config or 'unset'}).{interrupted}", now)
        return  # mig-manager needs time; the next advance reads its state
    if step.state in (MigStepState.LABELLED, MigStepState.RECONFIGURING):
        if labels.get(MIG_CONFIG) != step.to_config:
            _transition(step, MigStepState.FAILED, f"Someone set {MIG_CONFIG}={labels.get(MIG_CONFIG)} while the "
                                                   f"portal waited for {step.to_config}. {LEFT_CORDONED}", now)
            return
        state = labels.get(MIG_STATE, "")
        if state == "success":
            if step.cordoned_by_portal:
                inventory_reads.patch_node(kube, step.node_name, unschedulable=False)
                message = f"mig-manager reports success; uncordoned {step.node_name}."
            else:
                message = f"mig-manager reports success; {step.node_name} stays cordoned as it was found."
            _transition(step, MigStepState.UNCORDONED, message, now)
            _transition(step, MigStepState.DONE, f"{step.node_name} runs {step.to_config}.", now)
            return
        if state == "failed":
            _transition(step, MigStepState.FAILED, f"mig-manager reports failed for {step.to_config} on "
                                                   f"{step.node_name}. {LEFT_CORDONED}", now)
            return
        if state in ("pending", "rebooting") and step.state == MigStepState.LABELLED:
            _transition(step, MigStepState.RECONFIGURING, f"mig-manager reports {state}.", now)
        if now >= step.reconfigure_deadline_at:
            what = f"still {state}" if state else "no answer from mig-manager (no state label)"
            _transition(step, MigStepState.STUCK,
                        f"{step.node_name}: {what} {plan.reconfigure_timeout_seconds} s after the label was set "
                        f"(deadline {step.reconfigure_deadline_at:%Y-%m-%d %H:%M:%S} UTC). {LEFT_CORDONED}", now)
            return
        _wait(step, f"mig-manager reports {state or 'nothing yet'}; waiting until "
                    f"{step.reconfigure_deadline_at:%Y-%m-%d %H:%M:%S} UTC.")


def mig_plan_advance(*, plan_id: int, now: datetime.datetime | None = None) -> str:
    """Advance an approved or executing plan as far as it can go now; returns the plan's status ("busy" when
    another worker is advancing it)."""
    now = now or timezone.now()
    with transaction.atomic():
        plan = (MigPlan.objects.select_for_update(no_key=True, skip_locked=True, of=("self",)).select_related("cluster")
                .filter(pk=plan_id).first())
        if plan is None:
            return "busy" if MigPlan.objects.filter(pk=plan_id).exists() else "gone"
        if plan.status not in MIG_PLAN_ACTIVE:
            return plan.status
        if plan.status == MigPlanStatus.APPROVED:
            plan.status, plan.started_at = MigPlanStatus.EXECUTING, now
        try:
            connection = cluster_connection(plan.cluster)
        except KubeError as exc:  # nothing was done: the next advance tries again once credentials are fixed
            plan.message = f"Cannot connect to {plan.cluster.name}: {exc}"
            plan.save()
            return plan.status
        with KubeClient(connection) as kube:
            for step in plan.steps.order_by("position"):
                if step.state in MIG_STEP_FINISHED and step.state != MigStepState.DONE:
                    break
                if step.state == MigStepState.DONE:
                    continue
                try:
                    _advance_step(kube, plan, step, now)
                except TransientKubeError as exc:
                    _wait(step, f"Will retry at the next advance: {exc}")
                    break
                except KubeError as exc:
                    _transition(step, MigStepState.FAILED, f"The API server refused: {exc}", now)
                if step.state != MigStepState.DONE:
                    break  # one node at a time: the next starts once this one is done
        steps = list(plan.steps.order_by("position"))
        failed = next((s for s in steps if s.state in (MigStepState.FAILED, MigStepState.STUCK)), None)
        if failed:
            plan.status, plan.finished_at = MigPlanStatus.FAILED, now
            plan.message = f"Step {failed.position} ({failed.node_name}) {failed.state}: {failed.message}"
        elif all(s.state == MigStepState.DONE for s in steps):
            plan.status, plan.finished_at = MigPlanStatus.DONE, now
            plan.message = f"All {plural(len(steps), 'node')} reconfigured."
        if plan.status in (MigPlanStatus.FAILED, MigPlanStatus.DONE):
            # The nodes changed: let decisions and the fit check see it without waiting for the next beat.
            cluster_id = plan.cluster_id
            transaction.on_commit(lambda: _sync_soon(cluster_id))
        else:
            current = next(s for s in steps if s.state != MigStepState.DONE)
            plan.message = f"Step {current.position} ({current.node_name}): {current.message}"
        plan.save()
        return plan.status

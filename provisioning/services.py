"""Writes for the catalogue, and the allocation of requests: applying and tearing down their objects."""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from intake import events
from intake.choices import REQUEST_TRANSITIONS, RequestOrigin, RequestStatus
from intake.models import GpuRequest
from intake.services import request_transition
from gpu.catalogue import Catalogue, load_catalogue
from portal.dispatch import send_now

from .appliers.base import Applier
from .appliers.factory import applier_for
from .choices import JOB_FINISHED, JobKind, JobStatus
from .choices import Applier as ApplierKind
from .contract import REQUEST_ID, domain_key, selector_for_request
from .kube.connection import cluster_connection
from .credentials import cluster_credentials_set, cluster_server_changed
from .manifests import RenderError
from .manifests.validation import ManifestInvalid, validate_objects
from .models import AppliedObject, Cluster, GpuModel, MigProfile, NodePool, ProvisioningJob
from .selectors import cluster_for_request, request_manifests


@transaction.atomic
def catalogue_sync(*, catalogue: Catalogue | None = None, gpu_model_cls=None, mig_profile_cls=None) -> int:
    """Copy the shipped catalogue into the GpuModel/MigProfile tables (insert or update; never delete, since
    pools may point at a model). Takes model classes so a data migration can pass its historical ones."""
    gpu_model_cls = gpu_model_cls or GpuModel
    mig_profile_cls = mig_profile_cls or MigProfile
    catalogue = catalogue or load_catalogue()
    for spec in catalogue.models.values():
        model, _ = gpu_model_cls.objects.update_or_create(
            key=spec.key,
            defaults={
                "product": spec.product,
                "dra_product_name": spec.dra_product_name,
                "family": spec.family,
                "memory_gb": spec.memory_gb,
                "mig_total_slices": spec.mig.total_slices if spec.mig else None,
                "mig_min_driver": spec.mig.min_driver if spec.mig else "",
            },
        )
        for profile in (spec.mig.profiles.values() if spec.mig else ()):
            mig_profile_cls.objects.update_or_create(
                gpu_model=model,
                name=profile.name,
                defaults={
                    "memory_gb": profile.memory_gb,
                    "compute_slices": profile.compute_slices,
                    "max_instances": profile.max_instances,
                },
            )
    return len(catalogue.models)


@transaction.atomic
def cluster_register(
    *,
    name: str,
    server: str | None = None,
    gitops_repo: str | None = None,
    credentials: dict | None = None,
    **settings_fields,
):
    """Create or update a cluster target. Exactly one of `server` and `gitops_repo`; `credentials` are the keyword
    arguments of `cluster_credentials_set` (a changed server without them clears the old ones). Returns
    (cluster, created, credentials_cleared). Raises ValidationError naming the field."""
    if bool(server) == bool(gitops_repo):
        raise ValidationError({"server": ["Give exactly one of --server and --gitops-repo."]})
    defaults = dict(settings_fields)
    if server:
        defaults.update(applier=ApplierKind.KUBERNETES, api_server=server, gitops_repo="")
    else:
        defaults.update(applier=ApplierKind.GITOPS, gitops_repo=gitops_repo, api_server="")
    cluster = Cluster.objects.select_for_update().filter(name=name).first() or Cluster(name=name)
    for key, value in defaults.items():
        setattr(cluster, key, value)
    created = cluster.pk is None
    cluster.full_clean()
    cluster.save()
    cleared = cluster_server_changed(cluster=cluster)
    if server and credentials is not None:
        cluster_credentials_set(cluster=cluster, **(credentials or {}))
    return cluster, created, cleared and credentials is None


# --- allocations: applying and tearing down a request's Kubernetes objects -------------------------------------
#
# An approval writes a queued ProvisioningJob in the same transaction (a transactional outbox) and dispatches the
# Celery task after commit. The task calls `allocation_apply`; the beat sweep (provisioning.sweeps) re-dispatches
# jobs whose message was lost (broker down at commit time, Redis restarted, worker killed). Every step is
# idempotent: server-side apply and GitOps commits are no-ops the second time, the job row is reused,
# AppliedObject rows are upserted.

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApplyOutcome:
    job_id: int
    status: str
    objects: int = 0
    message: str = ""


def _job_for(gpu_request, kind: str):
    job, _ = ProvisioningJob.objects.select_for_update(no_key=True).get_or_create(
        request=gpu_request, kind=kind, defaults={"cluster": cluster_for_request(gpu_request=gpu_request)}
    )
    return job


@transaction.atomic
def allocation_enqueue(*, gpu_request, kind: str = JobKind.APPLY):
    """Record that work is due (the outbox row) and dispatch it once this transaction commits."""
    job = _job_for(gpu_request, kind)
    if job.status in JOB_FINISHED and kind == JobKind.TEARDOWN:
        job.status, job.message, job.finished_at = JobStatus.QUEUED, "", None  # a later cancel tears down again
    job.save()
    transaction.on_commit(lambda: dispatch_job(job_id=job.pk, task=job_task(kind)))
    return job


def allocation_on_approved(*, gpu_request) -> None:
    """Called by the workflows that approve (workflows.services), in the approval's transaction: the request gets
    its apply job, unless its objects came from the cluster (the admission check admits them,
    provisioning/admission.py)."""
    if gpu_request.origin == RequestOrigin.CLUSTER:
        return
    allocation_enqueue(gpu_request=gpu_request, kind=JobKind.APPLY)


def allocation_on_cancelled(*, gpu_request) -> None:
    """Called by whatever cancels a request (workflows.services, workflows.leases, chargeback.idle.services), in
    the cancel's transaction: what was applied (or is being applied) is torn down."""
    if gpu_request.provisioning_jobs.filter(kind=JobKind.APPLY).exists():
        allocation_enqueue(gpu_request=gpu_request, kind=JobKind.TEARDOWN)


def job_task(kind: str) -> str:
    """The name of the task that runs a job of this kind."""
    return "provisioning.allocation_apply" if kind == JobKind.APPLY else "provisioning.allocation_teardown"


def dispatch_job(*, job_id: int, task) -> bool:
    """Send the job's task to the broker; if it cannot be reached the job stays queued and the beat sweep
    (`sweeps.allocation_sweep`) sends it later."""
    if not send_now(task, job_id, what=f"job {job_id}"):
        return False
    ProvisioningJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(dispatched_at=timezone.now())
    return True


def applier_for_cluster(cluster) -> Applier:
    """The applier the cluster is configured for; credentials are read here and nowhere else."""
    return applier_for(
        cluster.applier,
        cluster_name=cluster.name,
        connection=cluster_connection(cluster) if cluster.applier == ApplierKind.KUBERNETES else None,
        gitops_repo=cluster.gitops_repo or str(settings.PORTAL_DATA_DIR / "gitops" / cluster.name),
        label_domain=settings.PORTAL_LABEL_DOMAIN,
    )


def _start(*, job_id: int, kind: str, after_attempt: int | None = None):
    """Lock the job and its request; move the request to provisioning on the first apply. Returns
    (job, gpu_request) or None when there is nothing (more) to do. A job waiting to retry is run only by the
    message scheduled for that retry (`after_attempt`: the job's attempts when it was scheduled)."""

    with transaction.atomic():
        job = ProvisioningJob.objects.select_for_update(no_key=True, of=("self",)).select_related("cluster").get(pk=job_id)
        gpu_request = GpuRequest.objects.select_for_update(no_key=True, of=("self",)).select_related("team").get(pk=job.request_id)
        if job.status in JOB_FINISHED:
            return None
        if job.status == JobStatus.RETRYING and after_attempt != job.attempts:
            return None  # a stale message (a sweep re-send, a duplicate) must not cut the backoff short
        if kind == JobKind.APPLY:
            if gpu_request.status == RequestStatus.APPROVED:
                request_transition(request_id=gpu_request.pk, to_status=RequestStatus.PROVISIONING, actor=None,
                                   comment=f"Provisioning on {job.cluster.name} ({job.cluster.get_applier_display()}).")
                gpu_request.refresh_from_db()
            elif gpu_request.status != RequestStatus.PROVISIONING:
                job.status, job.finished_at = JobStatus.CANCELLED, timezone.now()
                job.message = f"Not applied: the request is {gpu_request.status}."
                job.save()
                return None
        job.status, job.attempts = JobStatus.RUNNING, job.attempts + 1
        job.started_at = job.started_at or timezone.now()
        job.save()
        return job, gpu_request


# Namespace of the PostgreSQL advisory locks held while a job runs (the second key is the job id).
JOB_LOCK_NAMESPACE = 0x6A6F62  # "job"
JOB_MAX_ATTEMPTS = 6  # of the tasks that run a job (provisioning.tasks)


@contextlib.contextmanager
def _running_alone(job_id: int) -> Iterator[bool]:
    """Whether this process may run the job now. A job can have more than one message in flight (the sweep
    re-sends a job not started in time, the broker redelivers an unacknowledged one); a session advisory lock on
    the job, held while it runs, makes sure two of them never run it at the same time. A killed worker's lock
    goes with its connection, so a redelivered message can take over."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [JOB_LOCK_NAMESPACE, job_id])
        acquired = cursor.fetchone()[0]
    try:
        yield acquired
    finally:
        if acquired:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [JOB_LOCK_NAMESPACE, job_id])
            except DatabaseError:
                pass  # the connection is gone, and the lock with it


def allocation_apply(*, job_id: int, after_attempt: int | None = None) -> ApplyOutcome:
    """Render, validate and apply a request's objects. Raises the applier's transient errors for the task to
    retry; permanent errors fail the job and the request with the reason. A job already running elsewhere is
    skipped (its own message finishes it), and so is a job waiting to retry, unless this is its retry."""
    with _running_alone(job_id) as alone:
        if not alone:
            return ApplyOutcome(job_id=job_id, status="skipped", message="running elsewhere")
        return _apply(job_id=job_id, after_attempt=after_attempt)


def _apply(*, job_id: int, after_attempt: int | None) -> ApplyOutcome:
    started = _start(job_id=job_id, kind=JobKind.APPLY, after_attempt=after_attempt)
    if started is None:
        return ApplyOutcome(job_id=job_id, status="skipped")
    job, gpu_request = started
    try:
        objects = request_manifests(gpu_request=gpu_request)
        validate_objects(objects, job.cluster.kubernetes_version)
    except (RenderError, ManifestInvalid) as exc:
        allocation_fail(job_id=job.pk, message=f"The objects for this request could not be built: {exc}")
        return ApplyOutcome(job_id=job.pk, status=JobStatus.FAILED, message=str(exc))
    applier = applier_for_cluster(job.cluster)
    try:
        refs = applier.apply(objects)
    finally:
        applier.close()
    count = allocation_record(job_id=job.pk, refs=refs, objects=objects)
    return ApplyOutcome(job_id=job.pk, status=JobStatus.SUCCEEDED, objects=count)


@transaction.atomic
def allocation_record(*, job_id: int, refs, objects) -> int:


    job = ProvisioningJob.objects.select_for_update(no_key=True, of=("self",)).select_related("request").get(pk=job_id)
    now = timezone.now()
    request_label = domain_key(settings.PORTAL_LABEL_DOMAIN, REQUEST_ID)
    # Team-level objects (namespace, quota, queues) carry no request label: they outlive any one request.
    per_request = {(o["kind"], o["metadata"]["name"]) for o in objects if request_label in o["metadata"].get("labels", {})}
    for ref in refs:
        AppliedObject.objects.update_or_create(
            cluster_id=job.cluster_id, api_version=ref.api_version, kind=ref.kind, namespace=ref.namespace or "",
            name=ref.name,
            defaults={"request": job.request if (ref.kind, ref.name) in per_request else None, "uid": ref.uid or "",
                      "resource_version": ref.resource_version or "", "applied_at": now, "deleted_at": None},
        )
    job.status, job.finished_at, job.message = JobStatus.SUCCEEDED, now, f"Applied {len(refs)} objects."
    job.save()
    summary = ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in objects)
    events.event_note(request=job.request, kind="cluster", reason="Applied",
                      comment=f"{len(refs)} objects accepted by {job.cluster.name}: {summary}.")
    if job.request.status == RequestStatus.CANCELLED:
        # Cancelled while we were applying: take down what just arrived.
        allocation_enqueue(gpu_request=job.request, kind=JobKind.TEARDOWN)
    return len(refs)


@transaction.atomic
def allocation_retrying(*, job_id: int, message: str) -> int:
    """The job waits to be retried; returns its attempts so far, which its retry message carries."""
    ProvisioningJob.objects.filter(pk=job_id).update(status=JobStatus.RETRYING, message=message,
                                                     updated_at=timezone.now())
    return ProvisioningJob.objects.values_list("attempts", flat=True).get(pk=job_id)


@transaction.atomic
def allocation_fail(*, job_id: int, message: str) -> None:
    """The job failed for good: record why, and fail the request (if it was still being provisioned)."""

    job = ProvisioningJob.objects.select_for_update(no_key=True, of=("self",)).select_related("request").get(pk=job_id)
    job.status, job.message, job.finished_at = JobStatus.FAILED, message, timezone.now()
    job.save()
    if job.kind == JobKind.APPLY and RequestStatus.FAILED in REQUEST_TRANSITIONS[job.request.status]:
        request_transition(request_id=job.request_id, to_status=RequestStatus.FAILED, actor=None, comment=message)
        # The failed apply may have created some of the request's objects (those before the one refused); a failed
        # request cannot be cancelled, so take them down now or nobody ever will.
        allocation_enqueue(gpu_request=job.request, kind=JobKind.TEARDOWN)


def allocation_teardown(*, job_id: int, after_attempt: int | None = None) -> ApplyOutcome:
    """Delete everything the portal created for a request (by its labels), idempotently, in reverse apply order
    (workloads before the claims and gang objects they use). Skipped while the job runs elsewhere."""
    with _running_alone(job_id) as alone:
        if not alone:
            return ApplyOutcome(job_id=job_id, status="skipped", message="running elsewhere")
        return _teardown(job_id=job_id, after_attempt=after_attempt)


def _teardown(*, job_id: int, after_attempt: int | None) -> ApplyOutcome:
    started = _start(job_id=job_id, kind=JobKind.TEARDOWN, after_attempt=after_attempt)
    if started is None:
        return ApplyOutcome(job_id=job_id, status="skipped")
    job, gpu_request = started
    recorded = list(AppliedObject.objects.filter(request=gpu_request).order_by("-id"))
    kinds = [(o.api_version, o.kind) for o in recorded]
    namespaces = {o.namespace for o in recorded if o.namespace}
    try:
        request_label = domain_key(settings.PORTAL_LABEL_DOMAIN, REQUEST_ID)
        for obj in reversed(request_manifests(gpu_request=gpu_request)):
            if request_label in obj["metadata"].get("labels", {}):
                kinds.append((obj["apiVersion"], obj["kind"]))
                namespaces.add(obj["metadata"].get("namespace", ""))
    except (RenderError, NodePool.DoesNotExist):
        pass  # the pool is gone or changed: what was recorded is what there is to delete
    applier = applier_for_cluster(job.cluster)
    try:
        refs = applier.delete(selector_for_request(gpu_request.pk, settings.PORTAL_LABEL_DOMAIN),
                              namespaces=sorted(namespaces - {""}), kinds=list(dict.fromkeys(kinds)))
    finally:
        applier.close()
    with transaction.atomic():
        AppliedObject.objects.filter(request=gpu_request, deleted_at__isnull=True).update(deleted_at=timezone.now())
    
        events.event_note(request=gpu_request, kind="cluster", reason="Deleted",
                          comment=f"Removed {len(refs)} objects from {job.cluster.name}.")
    
        ProvisioningJob.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED, finished_at=timezone.now(),
                                                         message=f"Deleted {len(refs)} objects.")
    return ApplyOutcome(job_id=job.pk, status=JobStatus.SUCCEEDED, objects=len(refs))

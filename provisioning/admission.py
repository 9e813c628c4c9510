"""The portal as the admission check of its Kueue clusters (docs/admission-check.md).

On a Kueue cluster the portal applies one AdmissionCheck (`gpu-portal-approval`, controllerName
`gpu-portal.io/approval`) and makes the team ClusterQueue require it, so Kueue admits no Workload of a team queue
until the portal marks its check Ready. A run lists the Workloads of every namespace (and, given time, watches
them) and, for each one carrying the portal's check:

- work the portal rendered (its pod template carries the portal's labels of an approved request, in that team's
  namespace, under the name the renderer gave it) is marked Ready -- the portal applies only after approval;
- anything else in a team's namespace becomes a request "found in the cluster" (`intake.found`), decided from its
  pod template, that waits in the approval queue: Pending until the platform team decides, then Ready, or Rejected
  with the reason (Kueue then deactivates the Workload, and its Job never starts).

Idempotent, keyed by the Workload's uid (`AdmissionWorkload`): a restart finds the row, never makes a second
request, and writes the status only where the live entry differs from the decision (lastTransitionTime moves only
when the state does, as Kueue's SetAdmissionCheckState does).
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from intake.choices import RequestOrigin, RequestStatus
from intake.found import CannotDecide, answers_from_pod_sets, request_found_in_cluster
from intake.models import GpuRequest
from portal.dispatch import send_now
from portal.models import Team

from gpu.catalogue import load_catalogue
from . import contract
from .kube.apply import KubernetesApplier
from .kube.client import KubeClient
from .kube.connection import cluster_connection
from .kube.errors import KubeError
from .kube.workloads import (
    list_workloads,
    patch_admission_check_conditions,
    patch_workload_checks,
    read_admission_check,
    find_pod,
    read_cluster_queue,
    watch_workloads,
)
from .manifests.admission import (
    ADMISSION_CHECK_NAME,
    PENDING,
    READY,
    REJECTED,
    RETRY,
    asks_devices,
    active_condition,
    build_admission_check,
    build_cluster_queue_check,
    check_state,
    with_check_state,
    rendered_pod_shapes,
    rendered_shape,
    workload_owner,
    workload_pod_labels,
    workload_shape,
)
from .manifests import RenderError
from .manifests.gang import KUEUE_QUEUE_LABEL
from .contract import MANAGED_BY, MANAGED_BY_KEY
from .manifests.names import k8s_name, team_namespace
from .manifests.team import DEFAULT_CLUSTER_QUEUE
from .models import AdmissionBinding, AdmissionWorkload, AppliedObject, Cluster, NodePool
from .selectors.rendering import request_manifests

logger = logging.getLogger(__name__)

# Request statuses whose Workload, once bound, stays admitted: approved, and everything it moves on to.
ADMITTED_STATUSES = {RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.RUNNING, RequestStatus.STALLED,
                     RequestStatus.COMPLETED}
# ... and whose approval may still bind a Workload: not a completed one (its work is done).
ADMITTING_STATUSES = ADMITTED_STATUSES - {RequestStatus.COMPLETED}


@dataclass
class AdmissionRun:
    cluster: str
    status: str = "done"  # done | skipped | error
    seen: int = 0  # Workloads carrying the portal's check
    patched: int = 0  # status writes
    found: int = 0  # requests newly found in the cluster
    message: str = ""

    def summary(self) -> str:
        return (f"{self.cluster}: {self.status}; {self.seen} workload(s) checked, {self.patched} status write(s), "
                f"{self.found} found in the cluster" + (f"; {self.message}" if self.message else ""))


def _now() -> str:
    return timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def admission_check_install(*, kube: KubeClient, cluster: Cluster) -> str:
    """Apply the AdmissionCheck and the team ClusterQueue's admissionChecksStrategy (server-side apply: only that
    field is the portal's), and say the check is Active, as Kueue expects of its controller. The ClusterQueue is
    read first and left alone when the cluster has none: server-side apply would create it, empty (no
    resourceGroups, no namespaceSelector), and an empty queue admits nothing. Returns why it was left alone, or ""."""
    labels = {MANAGED_BY_KEY: MANAGED_BY}
    applier = KubernetesApplier(kube.connection, client=kube, label_domain=settings.PORTAL_LABEL_DOMAIN)
    queue = cluster.gang_queue or DEFAULT_CLUSTER_QUEUE
    missing = ""
    if read_cluster_queue(kube, queue) is None:
        missing = (f"ClusterQueue {queue} does not exist on {cluster.name}, and the portal never creates one: the "
                   "platform team creates it with its quota"
                   + ("" if cluster.gang_queue else " (or names its own in the cluster's gang_queue)")
                   + "; until then Kueue admits nothing from the teams' LocalQueues.")
        applier.apply([build_admission_check(labels)])
    else:
        applier.apply([build_admission_check(labels), build_cluster_queue_check(cluster.gang_queue, labels)])
    check = read_admission_check(kube, ADMISSION_CHECK_NAME)
    generation = check["metadata"].get("generation", 1)
    conditions = (check.get("status") or {}).get("conditions") or []
    active = next((c for c in conditions if c.get("type") == "Active"), {})
    if active.get("status") != "True" or active.get("observedGeneration") != generation:
        others = [c for c in conditions if c.get("type") != "Active"]
        patch_admission_check_conditions(kube, check, [*others, active_condition(generation, _now())])
    return missing


def _approved_work(gpu_request: GpuRequest, cluster: Cluster) -> contract.ApprovedWork:
    """What the request's approval admits on this cluster: the pod sets of the queued Jobs the portal renders for
    it, in its team's namespace, standing for the objects the portal applied for it (by uid)."""
    binding = AdmissionBinding.objects.filter(request=gpu_request).first()
    owner_uids = frozenset(AppliedObject.objects.filter(request=gpu_request, cluster=cluster, deleted_at__isnull=True)
                           .exclude(uid="").values_list("uid", flat=True))
    try:
        objects = request_manifests(gpu_request=gpu_request)
    except (RenderError, NodePool.DoesNotExist):  # cannot be rendered now: no pod sets match it
        objects = []
    return contract.ApprovedWork(
        request_id=gpu_request.pk, admits=gpu_request.status in ADMITTING_STATUSES,
        status=gpu_request.get_status_display().lower(), namespace=team_namespace(gpu_request.team.slug),
        owner_uids=owner_uids, shape=tuple(rendered_shape(objects, KUEUE_QUEUE_LABEL)),
        pod_shapes=tuple(rendered_pod_shapes(objects, KUEUE_QUEUE_LABEL)),
        bound_workload_uid=binding.workload_uid if binding else "")


def _applied_owner_uid(kube: KubeClient, workload: dict, gpu_request: GpuRequest, cluster: Cluster) -> str:
    """The uid up a Workload's owner chain that the portal may have applied: a Job's own; for a plain-pod Workload
    its Pod's controller (a StatefulSet, or a Deployment where no ReplicaSet sits between, as in kubesim), or, for
    a Pod of a ReplicaSet, the Deployment the portal applied for the request whose ReplicaSet that is by name
    (`<deployment>-<pod-template-hash>`, the Deployment controller's naming). A Pod cannot usefully claim a
    ReplicaSet it is not of: the garbage collector deletes a Pod whose owner uid does not exist, and a ReplicaSet
    deletes the pods it owns beyond its replicas. "" when it has none."""
    owner = workload_owner(workload)
    if owner["kind"] != "Pod":
        return owner["uid"]
    namespace = workload["metadata"].get("namespace", "")
    selector = contract.selector_string(contract.selector_for_request(gpu_request.pk, settings.PORTAL_LABEL_DOMAIN))
    pod = find_pod(kube, namespace, owner["name"], selector) or {}
    if (pod.get("metadata") or {}).get("uid") != owner["uid"]:
        return ""
    ref = next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
    if ref is None:
        return ""
    if ref.get("kind") != "ReplicaSet":
        return ref.get("uid", "")
    suffix = "-" + ((pod["metadata"].get("labels") or {}).get("pod-template-hash") or "")
    name = ref.get("name", "")
    if len(suffix) < 2 or not name.endswith(suffix):
        return ""
    deployment = AppliedObject.objects.filter(request=gpu_request, cluster=cluster, kind="Deployment",
                                              namespace=namespace, name=name[:-len(suffix)],
                                              deleted_at__isnull=True).first()
    return deployment.uid if deployment else ""


def _claimed_request(row: AdmissionWorkload, workload: dict, shape: list,
                     kube: KubeClient) -> tuple[GpuRequest | None, str]:
    """(the portal request this Workload is exactly the approved work of, "") or (None, why it is not)."""
    identity = contract.pod_identity({"metadata": {"namespace": row.namespace, "uid": row.uid,
                                                   "labels": workload_pod_labels(workload)}},
                                     settings.PORTAL_LABEL_DOMAIN)
    request_id = contract.bound_request_id(identity)
    gpu_request = (GpuRequest.objects.select_related("team").filter(pk=request_id, origin=RequestOrigin.PORTAL)
                   .first() if request_id else None)
    approved = _approved_work(gpu_request, row.cluster) if gpu_request else None
    per_pod = row.owner_kind == "Pod"
    row.applied_owner_uid = _applied_owner_uid(kube, workload, gpu_request, row.cluster) if approved else ""
    refusal = contract.admission_refusal(identity, workload_uid=row.uid, owner_uid=row.applied_owner_uid,
                                         shape=shape, approved=approved, per_pod=per_pod)
    if refusal:
        return None, refusal
    binding, _ = AdmissionBinding.objects.get_or_create(request=gpu_request, defaults={
        "cluster": row.cluster, "workload_uid": row.uid, "owner_uid": row.applied_owner_uid,
        "namespace": row.namespace, "shape": shape})
    if binding.workload_uid != row.uid and not (per_pod and binding.owner_uid == row.applied_owner_uid):
        return None, f"request #{gpu_request.pk} was already admitted once, as Workload {binding.workload_uid}"
    return gpu_request, ""


def _team_of(namespace: str) -> Team | None:
    return next((t for t in Team.objects.all() if team_namespace(t.slug) == namespace), None)


def _bind(row: AdmissionWorkload, workload: dict, kube: KubeClient) -> bool:
    """Give a row its request: the portal's own when the Workload is exactly what was approved, else one found in
    the cluster, waiting for review. Returns True if a request was found now."""
    shape = workload_shape(workload)
    row.message = ""
    if not asks_devices(shape):
        return False  # nothing to approve: Ready
    why = ""
    if workload_pod_labels(workload).get(MANAGED_BY_KEY) == MANAGED_BY:
        row.request, why = _claimed_request(row, workload, shape, kube)
        if row.request is not None:
            return False
    team = _team_of(row.namespace)
    if team is None:
        row.message = (f"Namespace {row.namespace} is no GPU portal team's namespace, yet it uses this ClusterQueue: "
                       "the platform team either registers the team whose namespace it is (the next pass then makes "
                       "a request of it, decided in the approval queue) or removes the namespace from the "
                       "ClusterQueue's namespaceSelector.")
        return False
    pod_sets = (workload.get("spec") or {}).get("podSets") or [{}]
    where = (f"{row.owner_kind or 'Workload'} {row.namespace}/{row.owner_name or row.name} on cluster "
             f"{row.cluster.name} (Workload {row.name}, uid {row.uid})")
    try:
        found = answers_from_pod_sets(owner_kind=row.owner_kind, shape=shape,
                                      template=pod_sets[0].get("template") or {}, catalogue=load_catalogue(),
                                      shape_text=contract.shape_words(shape))
        if why:
            found = dataclasses.replace(found, notes=[f"Not admitted as the request it names: {why}.", *found.notes])
        row.request = request_found_in_cluster(team=team, cluster_name=row.cluster.name,
                                               name=k8s_name(row.owner_name or row.name),
                                               found=found, where=where)
    except CannotDecide as exc:
        row.message = f"The GPU portal cannot make a request of it yet: {exc.message}"
        return False
    AdmissionBinding.objects.create(request=row.request, cluster=row.cluster, workload_uid=row.uid,
                                    owner_uid=workload_owner(workload)["uid"], namespace=row.namespace, shape=shape)
    return True


def _holds_quota(workload: dict) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True" for c in conditions)


def desired_state(row: AdmissionWorkload, workload: dict) -> tuple[str, str]:
    """(state, message) of the portal's check for this Workload. Ready only for exactly what was approved (checked
    again here against the pod sets bound at approval); waiting never holds quota: a Workload Kueue reserved quota
    for is answered Retry (Kueue releases it and requeues it), one without quota stays Pending; Rejected only on
    the platform team's decision."""
    gpu_request = row.request
    if gpu_request is None and not asks_devices(workload_shape(workload)):
        return READY, "Asks for no GPU: nothing for the GPU portal to approve."
    wait = RETRY if _holds_quota(workload) else PENDING
    if gpu_request is None:
        return wait, f"Waiting; no quota is held. {row.message}"
    where = f"request #{gpu_request.pk} in the GPU portal"
    if gpu_request.status == RequestStatus.PENDING_APPROVAL:
        return wait, f"Waiting for approval; no quota is held: {where}, for the platform team to decide."
    if gpu_request.status in ADMITTED_STATUSES:
        binding = AdmissionBinding.objects.filter(request=gpu_request).first()
        shape = workload_shape(workload)
        bound = binding is not None and (binding.workload_uid == row.uid or (
            row.owner_kind == "Pod" and row.applied_owner_uid and binding.owner_uid == row.applied_owner_uid))
        if not bound or binding.shape != shape:
            return wait, (f"Waiting; no quota is held: its pod sets ({contract.shape_words(shape)}) are not what "
                          f"{where} was approved for; submit the work again.")
        return READY, f"Approved: {where}."
    if gpu_request.status == RequestStatus.REJECTED:
        event = gpu_request.events.filter(to_status=RequestStatus.REJECTED).order_by("-at", "-id").first()
        return REJECTED, f"Rejected by the platform team ({where}): {event.comment if event else ''}".rstrip(": ")
    return REJECTED, f"The {where} is {gpu_request.get_status_display().lower()}."


def _row_for(cluster: Cluster, workload: dict, kube: KubeClient) -> tuple[AdmissionWorkload, bool]:
    """The Workload's row, made (and its request bound) the first time it is seen, and bound again while it has no
    request and waits (a namespace's team registered since, say); (row, found now)."""
    meta = workload["metadata"]
    owner = workload_owner(workload)
    with transaction.atomic():
        row, created = AdmissionWorkload.objects.select_for_update(no_key=True, of=("self",)).get_or_create(
            cluster=cluster, uid=meta["uid"],
            defaults={"namespace": meta.get("namespace", ""), "name": meta["name"], "owner_kind": owner["kind"],
                      "owner_name": owner["name"]},
        )
        found = False
        legacy = (not created and row.request_id is not None
                  and not AdmissionBinding.objects.filter(request_id=row.request_id).exists())
        if legacy and (row.state == READY or row.request.origin == RequestOrigin.CLUSTER):
            # admitted, or found in the cluster from this very Workload, before bindings were kept: bound as it is
            AdmissionBinding.objects.create(request_id=row.request_id, cluster=cluster, workload_uid=row.uid,
                                            owner_uid=owner["uid"], namespace=row.namespace,
                                            shape=workload_shape(workload))
        elif created or legacy or (row.request_id is None and row.state in (PENDING, RETRY)):
            row.request = None
            found = _bind(row, workload, kube)
            row.save(update_fields=["request", "message", "applied_owner_uid"])
    return AdmissionWorkload.objects.select_related("request", "cluster").get(pk=row.pk), found


def workload_admission_reconcile(*, kube: KubeClient, cluster: Cluster, workload: dict, run: AdmissionRun) -> None:
    """Decide one Workload's check and write it if the live entry says otherwise."""
    live = check_state(workload)
    if live is None or workload["metadata"].get("deletionTimestamp"):
        return  # not in a queue that requires the portal's check, or going away
    run.seen += 1
    row, found = _row_for(cluster, workload, kube)
    run.found += int(found)
    state, message = desired_state(row, workload)
    if live.get("state") != state or live.get("message") != message:
        checks = with_check_state(workload["status"]["admissionChecks"], state=state, message=message, now=_now(),
                                  requeue_after=settings.PORTAL_ADMISSION_RETRY_SECONDS if state == RETRY else None)
        patch_workload_checks(kube, workload, checks)
        run.patched += 1
    if row.state != state or row.message != message:
        changed = row.state != state
        row.state, row.message = state, message
        row.state_changed_at = timezone.now() if changed else row.state_changed_at
        row.save(update_fields=["state", "message", "state_changed_at"])


def admission_checks_sync(*, cluster_id: int, watch_seconds: int = 0, kube: KubeClient | None = None) -> AdmissionRun:
    """One controller run for a cluster: install the check, LIST the Workloads and decide each, then WATCH for
    `watch_seconds` deciding each change. A Kubernetes error ends the run (the next run lists again)."""
    cluster = Cluster.objects.get(pk=cluster_id)
    run = AdmissionRun(cluster=cluster.name)
    if cluster.gang_scheduler != "kueue" or not cluster.api_server or not cluster.enabled:
        run.status, run.message = "skipped", "not an enabled Kueue cluster the portal reaches through its API server"
        return run
    own_client = kube is None
    try:
        kube = kube or KubeClient(cluster_connection(cluster))
        missing = admission_check_install(kube=kube, cluster=cluster)
        if missing:
            run.status, run.message = "error", missing
        snapshot = list_workloads(kube)
        for workload in snapshot.workloads:
            _reconcile_quietly(kube, cluster, workload, run)
        if watch_seconds > 0:
            for event in watch_workloads(kube, resource_version=snapshot.resource_version,
                                         timeout_seconds=watch_seconds):
                if event.type in ("ADDED", "MODIFIED"):
                    _reconcile_quietly(kube, cluster, event.object, run)
    except KubeError as exc:
        run.status, run.message = "error", str(exc)
    finally:
        if own_client and kube is not None:
            kube.close()
    return run


def _reconcile_quietly(kube: KubeClient, cluster: Cluster, workload: dict, run: AdmissionRun) -> None:
    """A conflict on one Workload (Kueue wrote in between) is left to the next pass, which reads it again."""
    try:
        workload_admission_reconcile(kube=kube, cluster=cluster, workload=workload, run=run)
    except KubeError as exc:
        if getattr(exc, "status", None) != 409:
            raise
        logger.info("admission check: %s changed meanwhile; the next pass decides it", workload["metadata"]["name"])


def admission_checks_sync_all() -> list[int]:
    """Beat: one controller run per enabled Kueue cluster reached through its API server. Returns their ids."""
    ids = list(Cluster.objects.filter(enabled=True, gang_scheduler="kueue").exclude(api_server="")
               .order_by("name").values_list("pk", flat=True))
    for cluster_id in ids:
        send_now("provisioning.admission_checks_sync", cluster_id, what=f"the admission check of cluster {cluster_id}",
                 expires=settings.PORTAL_ADMISSION_SYNC_SECONDS)
    return ids

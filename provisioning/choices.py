from django.db import models

from gpu import vocabulary as v


class Strategy(models.TextChoices):
    """How a GPU is shared (names from `gpu.vocabulary`). The same words appear in decisions, labels,
    rate cards and reports."""

    WHOLE_GPU = v.WHOLE_GPU, "Whole GPU (exclusive)"
    MIG = v.MIG, "MIG partition"
    TIME_SLICING = v.TIME_SLICING, "Time-slicing"
    MPS = v.MPS, "MPS (CUDA Multi-Process Service)"


class SharingMode(models.TextChoices):
    """What a node pool offers."""

    EXCLUSIVE = v.EXCLUSIVE, "Whole GPUs"
    MIG = v.MIG, "MIG layout"
    TIME_SLICING = v.TIME_SLICING, "Time-sliced replicas"
    MPS = v.MPS, "MPS replicas"


SHARING_MODE_FOR_STRATEGY = {Strategy(s): SharingMode(m) for s, m in v.SHARING_MODE_FOR_STRATEGY.items()}


class MigStrategy(models.TextChoices):
    MIXED = "mixed", "mixed (nvidia.com/mig-<profile>)"
    SINGLE = "single", "single (nvidia.com/gpu is a slice)"


class SchedulingModel(models.TextChoices):
    DEVICE_PLUGIN = v.DEVICE_PLUGIN, "Device plugin (extended resources)"
    DRA = v.DRA, "Dynamic Resource Allocation (resource.k8s.io/v1)"


class GangScheduler(models.TextChoices):
    VOLCANO = v.VOLCANO, "Volcano"
    KAI = v.KAI, "NVIDIA KAI Scheduler"
    KUEUE = v.KUEUE, "Kueue"
    NATIVE = v.NATIVE, "Kubernetes Workload API"
    NONE = v.NO_GANG_SCHEDULER, "None"


class Applier(models.TextChoices):
    KUBERNETES = "kubernetes", "Kubernetes API (server-side apply)"
    GITOPS = "gitops", "GitOps repository"


class CredentialSource(models.TextChoices):
    TOKEN = "token", "Stored service-account token (encrypted)"
    IN_CLUSTER = "in_cluster", "The portal pod's own service account"
    KUBECONFIG = "kubeconfig", "A kubeconfig file on the portal's hosts"
    SECRET = "secret", "A token in a Kubernetes Secret, read with the pod's service account"


class PoolSource(models.TextChoices):
    DECLARED = "declared", "Declared by the platform team"
    DISCOVERED = "discovered", "Discovered from the cluster"


KUBERNETES_VERSIONS = ("1.34", "1.35", "1.36", "1.37")


class JobKind(models.TextChoices):
    APPLY = "apply", "Apply objects"
    TEARDOWN = "teardown", "Delete objects"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    RETRYING = "retrying", "Waiting to retry"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Not needed any more"


JOB_FINISHED = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})


# --- inventory and MIG plans ---------------------------------------------


class SchedulingModelSeen(models.TextChoices):
    """How a node hands out GPUs, as discovery saw it. `both` is a conflict: the device plugin and the NVIDIA DRA
    GPU plugin must not manage the same node (reference §4.5)."""

    DEVICE_PLUGIN = v.DEVICE_PLUGIN, "Device plugin (extended resources)"
    DRA = v.DRA, "DRA ResourceSlices"
    BOTH = v.BOTH, "Both (conflict)"


class MigPlanStatus(models.TextChoices):
    DRAFT = "draft", "Draft (proposed, not approved)"
    APPROVED = "approved", "Approved (execution starts)"
    EXECUTING = "executing", "Executing"
    DONE = "done", "Done"
    FAILED = "failed", "Failed (see the steps)"
    CANCELLED = "cancelled", "Cancelled"


MIG_PLAN_ACTIVE = frozenset({MigPlanStatus.APPROVED, MigPlanStatus.EXECUTING})


class MigStepState(models.TextChoices):
    PENDING = "pending", "Pending"
    CORDONED = "cordoned", "Cordoned"
    DRAINING = "draining", "Waiting for GPU pods to finish"
    LABELLED = "labelled", "nvidia.com/mig.config set"
    RECONFIGURING = "reconfiguring", "mig-manager reconfiguring"
    UNCORDONED = "uncordoned", "Uncordoned"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    STUCK = "stuck", "Stuck (deadline passed)"


MIG_STEP_FINISHED = frozenset({MigStepState.DONE, MigStepState.FAILED, MigStepState.STUCK})

# The execution state machine of one step; every transition is checked against it and logged on the step.
MIG_STEP_TRANSITIONS: dict[str, frozenset[str]] = {
    MigStepState.PENDING: frozenset({MigStepState.CORDONED, MigStepState.DONE, MigStepState.FAILED}),
    MigStepState.CORDONED: frozenset({MigStepState.DRAINING, MigStepState.FAILED}),
    MigStepState.DRAINING: frozenset({MigStepState.LABELLED, MigStepState.FAILED}),
    MigStepState.LABELLED: frozenset({MigStepState.RECONFIGURING, MigStepState.UNCORDONED, MigStepState.FAILED,
                                      MigStepState.STUCK}),
    MigStepState.RECONFIGURING: frozenset({MigStepState.UNCORDONED, MigStepState.FAILED, MigStepState.STUCK}),
    MigStepState.UNCORDONED: frozenset({MigStepState.DONE}),
    MigStepState.DONE: frozenset(),
    MigStepState.FAILED: frozenset(),
    MigStepState.STUCK: frozenset(),
}


class FitVerdict(models.TextChoices):
    FITS_NOW = v.FITS_NOW, "Fits now"
    FITS_AFTER = v.FITS_AFTER, "Fits after running work finishes"
    NEVER = v.NEVER_FITS, "Never fits as the pool is"


# --- status reconciliation and stalled gangs (reconcile) --------------------------------------------------------


class StallEnd(models.TextChoices):
    RECOVERED = "recovered", "The whole gang ran"
    COMPLETED = "completed", "The request completed"
    FAILED = "failed", "The request failed"
    RELEASED = "released", "Released by the policy"
    CANCELLED = "cancelled", "The request was cancelled"


class NotificationKind(models.TextChoices):
    STALLED = "stalled", "Gang stalled"
    RELEASED = "released", "Stalled gang released"


class ReconcileStatus(models.TextChoices):
    OK = "ok", "Reconciled"
    SKIPPED = "skipped", "Skipped"
    ERROR = "error", "Error"



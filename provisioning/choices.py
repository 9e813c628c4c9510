from django.db import models


class Strategy(models.TextChoices):
    """How a GPU is shared. The same words appear in decisions, labels, rate cards and reports."""

    WHOLE_GPU = "whole_gpu", "Whole GPU (exclusive)"
    MIG = "mig", "MIG partition"
    TIME_SLICING = "time_slicing", "Time-slicing"


class SharingMode(models.TextChoices):
    """What a node pool offers."""

    EXCLUSIVE = "exclusive", "Whole GPUs"
    MIG = "mig", "MIG layout"
    TIME_SLICING = "time_slicing", "Time-sliced replicas"


SHARING_MODE_FOR_STRATEGY = {
    Strategy.WHOLE_GPU: SharingMode.EXCLUSIVE,
    Strategy.MIG: SharingMode.MIG,
    Strategy.TIME_SLICING: SharingMode.TIME_SLICING,
}


class MigStrategy(models.TextChoices):
    MIXED = "mixed", "mixed (nvidia.com/mig-<profile>)"
    SINGLE = "single", "single (nvidia.com/gpu is a slice)"


class SchedulingModel(models.TextChoices):
    DEVICE_PLUGIN = "device_plugin", "Device plugin (extended resources)"
    DRA = "dra", "Dynamic Resource Allocation (resource.k8s.io/v1)"


class GangScheduler(models.TextChoices):
    VOLCANO = "volcano", "Volcano"
    KAI = "kai", "NVIDIA KAI Scheduler"
    KUEUE = "kueue", "Kueue"
    NATIVE = "native", "Kubernetes Workload API"
    NONE = "none", "None"


class Applier(models.TextChoices):
    KUBERNETES = "kubernetes", "Kubernetes API (server-side apply)"
    GITOPS = "gitops", "GitOps repository"


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


class NotificationChannel(models.TextChoices):
    EMAIL = "email", "E-mail"
    WEBHOOK = "webhook", "Webhook"


class NotificationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RETRYING = "retrying", "Waiting to retry"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class ReconcileStatus(models.TextChoices):
    OK = "ok", "Reconciled"
    SKIPPED = "skipped", "Skipped"
    ERROR = "error", "Error"


# --- end status reconciliation ----------------------------------------------------------------------------------

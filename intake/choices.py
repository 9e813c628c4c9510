from django.db import models


class WorkloadClass(models.TextChoices):
    TRAINING = "training", "Training"
    INFERENCE = "inference", "Inference"
    DEVELOPMENT = "development", "Development"


class Tenancy(models.TextChoices):
    MULTI_TENANT = "multi_tenant", "Multi-tenant"
    DEDICATED = "dedicated", "Dedicated"


class Latency(models.TextChoices):
    LATENCY_SENSITIVE = "latency_sensitive", "Latency-sensitive"
    BATCH = "batch", "Batch"


class DataSensitivity(models.TextChoices):
    STANDARD = "standard", "Standard"
    REGULATED = "regulated", "Regulated"


class MemoryIsolation(models.TextChoices):
    NONE = "none", "None (shared memory)"
    LIMITED = "limited", "Per-client limit (MPS)"
    HARDWARE = "hardware", "Hardware (MIG)"
    EXCLUSIVE = "exclusive", "Exclusive (whole GPU)"


class FabricIsolation(models.TextChoices):
    SHARED = "shared", "Shared NVLink fabric"
    TENANT_EXCLUSIVE = "tenant_exclusive", "Tenant-exclusive NVLink domain"


class ReasonSource(models.TextChoices):
    POLICY = "policy", "A policy rule decided"
    DEFAULT = "default", "Inherited by default"


class RuleKind(models.TextChoices):
    ROUTE = "route", "Route (picks the strategy)"
    GUARDRAIL = "guardrail", "Guardrail (applies on top of any route)"


class PolicyStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class RequestStatus(models.TextChoices):
    PENDING_APPROVAL = "pending_approval", "Pending approval"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    PROVISIONING = "provisioning", "Provisioning"
    RUNNING = "running", "Running"
    STALLED = "stalled", "Stalled"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class RequestOrigin(models.TextChoices):
    """How a request reached the portal: submitted to it, or found in a cluster's Kueue queue by the portal's
    admission check (docs/admission-check.md) -- then its objects already exist and approval only admits them."""

    PORTAL = "portal", "Submitted to the portal"
    CLUSTER = "cluster", "Found in the cluster"


REQUEST_TERMINAL = frozenset(
    {RequestStatus.REJECTED, RequestStatus.COMPLETED, RequestStatus.FAILED, RequestStatus.CANCELLED}
)
REQUEST_ACTIVE = frozenset(set(RequestStatus) - REQUEST_TERMINAL)
# Requests that hold their GPUs (and count against the team's quota) until they end.
REQUEST_HOLDING = (RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.RUNNING, RequestStatus.STALLED)

# The request state machine (DESIGN.md). The one table every transition is checked against.
REQUEST_TRANSITIONS: dict[str, frozenset[str]] = {
    RequestStatus.PENDING_APPROVAL: frozenset({RequestStatus.APPROVED, RequestStatus.REJECTED, RequestStatus.CANCELLED}),
    RequestStatus.APPROVED: frozenset({RequestStatus.PROVISIONING, RequestStatus.FAILED, RequestStatus.CANCELLED}),
    RequestStatus.PROVISIONING: frozenset(
        {RequestStatus.RUNNING, RequestStatus.STALLED, RequestStatus.COMPLETED, RequestStatus.FAILED, RequestStatus.CANCELLED}
    ),
    RequestStatus.RUNNING: frozenset(
        {RequestStatus.STALLED, RequestStatus.COMPLETED, RequestStatus.FAILED, RequestStatus.CANCELLED}
    ),
    RequestStatus.STALLED: frozenset(
        {RequestStatus.RUNNING, RequestStatus.COMPLETED, RequestStatus.FAILED, RequestStatus.CANCELLED}
    ),
    RequestStatus.REJECTED: frozenset(),
    RequestStatus.COMPLETED: frozenset(),
    RequestStatus.FAILED: frozenset(),
    RequestStatus.CANCELLED: frozenset(),
}


class EventKind(models.TextChoices):
    TRANSITION = "transition", "Status change"
    CLUSTER = "cluster", "Cluster event"
    NOTE = "note", "Note"

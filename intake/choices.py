from django.db import models

from gpu import vocabulary as v


class WorkloadClass(models.TextChoices):
    TRAINING = v.TRAINING, "Training"
    INFERENCE = v.INFERENCE, "Inference"
    DEVELOPMENT = v.DEVELOPMENT, "Development"


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
    """The request state machine's statuses (names from `gpu.vocabulary`, which reconciliation reads too)."""

    PENDING_APPROVAL = v.PENDING_APPROVAL, "Pending approval"
    APPROVED = v.APPROVED, "Approved"
    REJECTED = v.REJECTED, "Rejected"
    PROVISIONING = v.PROVISIONING, "Provisioning"
    RUNNING = v.RUNNING, "Running"
    STALLED = v.STALLED, "Stalled"
    COMPLETED = v.COMPLETED, "Completed"
    FAILED = v.FAILED, "Failed"
    CANCELLED = v.CANCELLED, "Cancelled"


class RequestOrigin(models.TextChoices):
    """How a request reached the portal: submitted to it, or found in a cluster's Kueue queue by the portal's
    admission check (docs/admission-check.md) -- then its objects already exist and approval only admits them."""

    PORTAL = "portal", "Submitted to the portal"
    CLUSTER = "cluster", "Found in the cluster"


REQUEST_TERMINAL = frozenset(RequestStatus(status) for status in v.REQUEST_TERMINAL)
REQUEST_ACTIVE = frozenset(set(RequestStatus) - REQUEST_TERMINAL)
# Requests that hold their GPUs (and count against the team's quota) until they end.
REQUEST_HOLDING = tuple(RequestStatus(status) for status in v.REQUEST_HOLDING)

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

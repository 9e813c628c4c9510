from django.db import models


class Category(models.TextChoices):
    """What a stretch of GPU time was."""

    USAGE = "usage", "Usage"
    WASTE = "waste", "Waste (stalled gang)"
    IDLE = "idle", "Idle (paid for, unused)"
    PREEMPTED = "preempted", "Preempted (run stopped for higher-priority work)"


# The report's categories for adjustment lines (late data for a closed month, booked in the next open month);
# never stored on an interval.
ADJUSTMENT = "adjustment"
WASTE_ADJUSTMENT = "waste_adjustment"
IDLE_ADJUSTMENT = "idle_adjustment"
# A hardware-fault credit (chargeback.credits), and its reversal by finance once the credited time was frozen.
CREDIT = "credit"
CREDIT_REVERSAL = "credit_reversal"
REPORT_CATEGORIES = (*Category.values, ADJUSTMENT, WASTE_ADJUSTMENT, IDLE_ADJUSTMENT, CREDIT, CREDIT_REVERSAL)


class EndSource(models.TextChoices):
    """Where an interval's end came from; blank while the pod still holds its GPUs."""

    OPEN = "", "Open (still running)"
    CONTAINER = "container", "Latest container finishedAt"
    POD_CONDITION = "pod_condition", "Pod condition (no container finish recorded)"
    VANISHED = "vanished", "Pod disappeared: last collection that saw it"
    SPLIT = "split", "Split where a waste window starts"


class CollectionStatus(models.TextChoices):
    OK = "ok", "Ingested"
    SKIPPED = "skipped", "Skipped"
    FAILED = "failed", "Failed"


class Flag(models.TextChoices):
    """Why an interval deserves a second look. Ingestion records them; it never drops the usage."""

    EQUIVALENTS_MISMATCH = "equivalents_mismatch", "The gpu-equivalents annotation disagrees with the catalogue"
    EQUIVALENTS_UNVERIFIED = "equivalents_unverified", "No catalogue value to check against: annotation used"
    UNKNOWN_REQUEST = "unknown_request", "The request-id label names no request"
    TEAM_MISMATCH = "team_mismatch", "The team label disagrees with the request's team"
    CLUSTER_MISMATCH = "cluster_mismatch", "The cluster label disagrees with the cluster it was read from"
    FROM_REQUEST = "from_request", "A missing annotation was taken from the request's decision"
    ALLOCATION_MISMATCH = "allocation_mismatch", "The cluster allocated other than the approval: billed as allocated"
    FOUND_IN_CLUSTER = "found_in_cluster", ("Not made by an object the portal applied: billed to the namespace's "
                                            "team, for the platform team to look at")


# Report dimensions, in the order they appear as CSV columns.
GROUP_BY_CHOICES = ("team", "cost_center", "cluster", "strategy", "gpu_model", "mig_profile", "request", "month", "day")


class BudgetMode(models.TextChoices):
    """What a budget does when a request would take the forecast past it."""

    NOTIFY = "notify", "Notify only"
    REQUIRE_REVIEW = "require_review", "Over-budget requests go to review"


DEFAULT_BUDGET_THRESHOLDS = [80, 100]

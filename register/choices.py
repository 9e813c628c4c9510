from django.db import models


class DecisionArea(models.TextChoices):
    """Platform decisions that had no record before the register: cluster settings nobody signed off."""

    SCHEDULING_MODEL = "scheduling_model", "Scheduling model (device plugin or DRA)"
    GANG_BACKEND = "gang_backend", "Gang scheduling backend"
    DRIVER_LIFECYCLE = "driver_lifecycle", "Driver lifecycle (who owns upgrades)"


class Verdict(models.TextChoices):
    """How the register judges an item. `decided` only where an owner signed something off that still matches
    what is configured and running; `conflict` where a sign-off, the configuration or the nodes disagree."""

    DECIDED = "decided", "Decided (signed off)"
    INHERITED = "inherited", "Inherited (nobody chose it)"
    CONFLICT = "conflict", "Conflict"


class UpgradeStatus(models.TextChoices):
    PLANNED = "planned", "Planned"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


class Section(models.TextChoices):
    """The register's sections, in the order they are shown (also the `area` of their items)."""

    SHARING_STRATEGY = "sharing_strategy", "Sharing strategy per workload class"
    SCHEDULING_MODEL = "scheduling_model", "Scheduling model per cluster and pool"
    GANG_SCHEDULING = "gang_scheduling", "Gang scheduling per cluster"
    TENANT_ISOLATION = "tenant_isolation", "Tenant isolation"
    DRIVER_LIFECYCLE = "driver_lifecycle", "Driver lifecycle"
    CHARGEBACK_COVERAGE = "chargeback_coverage", "Chargeback coverage"
    PREEMPTION = "preemption", "Preemption"


# What a decision's `value` holds, per area: key -> allowed values (None: free text). Driver lifecycle decisions
# carry no value: their owner is the owner of the upgrades, and planned upgrades are DriverUpgradePlan rows.
DECISION_VALUE_KEYS = {
    DecisionArea.SCHEDULING_MODEL: "scheduling_model",
    DecisionArea.GANG_BACKEND: "gang_backend",
}

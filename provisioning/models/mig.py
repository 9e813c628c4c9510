"""MIG layout plans: proposed `nvidia.com/mig.config` changes for a cluster, executed node by node."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from ..choices import MIG_PLAN_ACTIVE, MigPlanStatus, MigStepState
from .clusters import Cluster
from .pools import Node


class MigPlan(models.Model):
    """Proposed `nvidia.com/mig.config` changes for one cluster, with their cost; approved by the platform team,
    then executed node by node by the beat-driven `provisioning.mig_plan_advance` task."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="mig_plans")
    status = models.CharField(max_length=10, choices=MigPlanStatus.choices, default=MigPlanStatus.DRAFT)
    summary = models.TextField(blank=True)
    demand = models.JSONField(default=list, blank=True, help_text="the unmet MIG demand the plan addresses")
    unmet = models.JSONField(default=list, blank=True, help_text="demand no layout change can meet, and why")
    drain_timeout_seconds = models.PositiveIntegerField(
        default=3600, help_text="how long a cordoned node waits for its GPU pods before the label is set anyway"
    )
    reconfigure_timeout_seconds = models.PositiveIntegerField(
        default=900, help_text="how long mig-manager may take before the step is reported stuck"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name, verbose_name_plural = "MIG plan", "MIG plans"
        constraints = [
            # One plan at a time changes a cluster's layouts.
            models.UniqueConstraint(
                fields=["cluster"],
                condition=models.Q(status__in=sorted(MIG_PLAN_ACTIVE)),
                name="%(app_label)s_%(class)s_one_active_per_cluster",
            ),
        ]

    def __str__(self) -> str:
        return f"MIG plan #{self.pk} for {self.cluster.name} ({self.status})"


class MigPlanStep(models.Model):
    """One node's layout change: its cost estimate, the workloads it interrupts, and its execution (every state
    change is appended to `log`)."""

    plan = models.ForeignKey(MigPlan, on_delete=models.CASCADE, related_name="steps")
    node = models.ForeignKey(Node, null=True, blank=True, on_delete=models.SET_NULL, related_name="mig_steps")
    node_name = models.CharField(max_length=253)
    position = models.PositiveSmallIntegerField()
    from_config = models.CharField(max_length=63, blank=True)
    to_config = models.CharField(max_length=63)
    gpu_count = models.PositiveSmallIntegerField(default=0)
    gains = models.JSONField(default=dict, blank=True, help_text="MIG devices per profile after minus before")
    estimated_seconds_min = models.PositiveIntegerField(default=0)
    estimated_seconds_max = models.PositiveIntegerField(default=0)
    remaining_work_seconds = models.PositiveIntegerField(default=0)
    remaining_work_known = models.BooleanField(default=True, help_text="false: a running workload has no end")
    affected_workloads = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=20, choices=MigStepState.choices, default=MigStepState.PENDING)
    message = models.TextField(blank=True)
    log = models.JSONField(default=list, blank=True, help_text='[{"at", "from", "to", "message"}]')
    cordoned_by_portal = models.BooleanField(default=False, help_text="only a node the portal cordoned is uncordoned")
    drain_deadline_at = models.DateTimeField(null=True, blank=True)
    reconfigure_deadline_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state_changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan", "position"]
        verbose_name, verbose_name_plural = "MIG plan step", "MIG plan steps"
        constraints = [
            models.UniqueConstraint(fields=["plan", "position"], name="%(app_label)s_%(class)s_unique_position"),
            models.UniqueConstraint(fields=["plan", "node_name"], name="%(app_label)s_%(class)s_one_per_node"),
        ]

    def __str__(self) -> str:
        return f"{self.node_name}: {self.from_config or '-'} -> {self.to_config} ({self.state})"

"""Team quotas in GPU equivalents, per sharing strategy."""
from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

from ..choices import Strategy


class TeamQuota(models.Model):
    """How many GPU equivalents of one sharing strategy a team may hold at once (approved and running work).
    The portal enforces it exactly at approval; the namespace's ResourceQuota is the cluster-side backstop."""

    team = models.ForeignKey("portal.Team", on_delete=models.CASCADE, related_name="gpu_quotas")
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    gpu_equivalents = models.DecimalField(max_digits=9, decimal_places=3, validators=[MinValueValidator(0)])
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["team__slug", "strategy"]
        constraints = [
            models.UniqueConstraint(fields=["team", "strategy"], name="%(app_label)s_%(class)s_unique_team_strategy"),
        ]

    def __str__(self) -> str:
        return f"{self.team.slug}: {self.gpu_equivalents} {self.strategy}"

"""The GPU catalogue: models and their MIG profiles, mirroring the shipped data files (`gpu.catalogue`)."""
from __future__ import annotations

from django.db import models


class GpuModel(models.Model):
    key = models.CharField(max_length=40, unique=True)
    product = models.CharField(max_length=100, unique=True, help_text="GFD label nvidia.com/gpu.product")
    dra_product_name = models.CharField(max_length=100)
    family = models.CharField(max_length=40)
    memory_gb = models.PositiveIntegerField()
    mig_total_slices = models.PositiveSmallIntegerField(null=True, blank=True)
    mig_min_driver = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["key"]
        verbose_name, verbose_name_plural = "GPU model", "GPU models"

    def __str__(self) -> str:
        return self.key

    @property
    def mig_capable(self) -> bool:
        return self.mig_total_slices is not None


class MigProfile(models.Model):
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, related_name="mig_profiles")
    name = models.CharField(max_length=40)
    memory_gb = models.PositiveIntegerField()
    compute_slices = models.PositiveSmallIntegerField()
    max_instances = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["gpu_model__key", "compute_slices", "memory_gb", "name"]
        verbose_name, verbose_name_plural = "MIG profile", "MIG profiles"
        constraints = [
            models.UniqueConstraint(fields=["gpu_model", "name"], name="%(app_label)s_%(class)s_unique_model_name"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_model.key} {self.name}"

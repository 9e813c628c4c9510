"""Writes for the catalogue and the declared inventory."""
from __future__ import annotations

from django.db import transaction

from .catalogue import Catalogue, load_catalogue


@transaction.atomic
def catalogue_sync(*, catalogue: Catalogue | None = None, gpu_model_cls=None, mig_profile_cls=None) -> int:
    """Copy the shipped catalogue into the GpuModel/MigProfile tables (insert or update; never delete, since
    pools may point at a model). Takes model classes so a data migration can pass its historical ones."""
    from .models import GpuModel, MigProfile

    gpu_model_cls = gpu_model_cls or GpuModel
    mig_profile_cls = mig_profile_cls or MigProfile
    catalogue = catalogue or load_catalogue()
    for spec in catalogue.models.values():
        model, _ = gpu_model_cls.objects.update_or_create(
            key=spec.key,
            defaults={
                "product": spec.product,
                "dra_product_name": spec.dra_product_name,
                "family": spec.family,
                "memory_gb": spec.memory_gb,
                "mig_total_slices": spec.mig.total_slices if spec.mig else None,
                "mig_min_driver": spec.mig.min_driver if spec.mig else "",
            },
        )
        for profile in (spec.mig.profiles.values() if spec.mig else ()):
            mig_profile_cls.objects.update_or_create(
                gpu_model=model,
                name=profile.name,
                defaults={
                    "memory_gb": profile.memory_gb,
                    "compute_slices": profile.compute_slices,
                    "max_instances": profile.max_instances,
                },
            )
    return len(catalogue.models)

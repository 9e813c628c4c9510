"""Field validators of the cluster and pool models (referenced by their migrations as provisioning.models.X)."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

from ..manifests.devices import DRA_DRIVER_FEATURE_GATES
from ..manifests.network import namespace_problems, pod_label_problems

driver_version_validator = RegexValidator(r"^\d{3}(\.\d+){0,2}$", "A driver version such as 570.124.06.")


def dra_feature_gates_validator(value) -> None:
    if not isinstance(value, list) or not all(isinstance(gate, str) for gate in value):
        raise ValidationError('A list of NVIDIA DRA driver feature gate names, e.g. ["TimeSlicingSettings"].')
    unknown = sorted(set(value) - set(DRA_DRIVER_FEATURE_GATES))
    if unknown:
        raise ValidationError(
            f"Unknown NVIDIA DRA driver feature gate(s): {', '.join(unknown)}; known (driver v0.4.1): "
            f"{', '.join(DRA_DRIVER_FEATURE_GATES)}."
        )


def namespace_validator(value: str) -> None:
    if problems := namespace_problems(value):
        raise ValidationError(problems)


def pod_labels_validator(value) -> None:
    if problems := pod_label_problems(value):
        raise ValidationError(problems)

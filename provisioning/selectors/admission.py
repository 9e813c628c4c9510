"""The review page's admission section (workflows.selectors.review_sections): for work bound to a Kueue Workload
(a request found in the cluster, or an approved request once admitted), exactly what approval admits there -- the
Workload's pod sets (count x devices and DRA claims per pod, images), its namespace and uid (docs/admission-check.md)."""
from __future__ import annotations

from django.utils.html import format_html

from ..contract import shape_words
from ..models import AdmissionBinding


def admission_review_section(*, gpu_request) -> dict | None:
    binding = AdmissionBinding.objects.select_related("cluster").filter(request=gpu_request).first()
    if binding is None:
        return None
    return {"title": "What approval admits on the cluster", "html": format_html(
        '<p data-testid="admission-binding">Exactly {} in namespace {} on {} (Kueue Workload uid {}), once; the '
        "portal's admission check verifies it again when Kueue admits it. Anything else carrying its labels is a "
        "new request.</p>", shape_words(binding.shape), binding.namespace, binding.cluster.name,
        binding.workload_uid)}

"""Vocabulary values in the words people read on pages ("device_plugin" -> "device plugin").

Django-free, so the pure decision code can use it too. The API keeps the identifiers; only pages and sentences
use these words. The template filter `words` (intake/templatetags/portal_words.py) adds the labels that live in
the TextChoices and the questionnaire, so every vocabulary is looked up in one place.
"""
from __future__ import annotations

from gpu.vocabulary import BOTH, DEVICE_PLUGIN, DRA, KAI, KUEUE, NATIVE, NO_GANG_SCHEDULER, VOLCANO

SCHEDULING_MODEL_WORDS = {DEVICE_PLUGIN: "device plugin", DRA: "DRA (Dynamic Resource Allocation)",
                          BOTH: "both device plugin and DRA"}
GANG_BACKEND_WORDS = {VOLCANO: "Volcano", KAI: "KAI Scheduler", KUEUE: "Kueue", NATIVE: "the Kubernetes Workload API",
                      NO_GANG_SCHEDULER: "no gang scheduler"}
MEMORY_ISOLATION_WORDS = {"none": "none (memory is shared)", "hardware": "hardware (MIG)",
                          "limited": "limited (an MPS client limit, not hardware)",
                          "exclusive": "exclusive (whole GPU)"}
FABRIC_ISOLATION_WORDS = {"shared": "shared NVLink fabric", "tenant_exclusive": "NVLink domain of your own"}
# Decision fields, as the reasons table names them (answer keys are named by their question instead).
DECISION_FIELD_WORDS = {
    "strategy": "Sharing strategy", "gpu_model": "GPU model", "mig_profile": "MIG profile",
    "node_pool": "Node pool", "cluster": "Cluster", "scheduling_model": "Scheduling model",
    "mig_readiness": "MIG readiness",
    "memory_isolation": "Memory isolation", "fabric_isolation": "Fabric isolation", "gang": "Gang scheduling",
    "driver": "NVIDIA driver", "lease": "Lease", "approval": "Approval", "request": "Request", "answers": "Answers",
    "team": "Team", "name": "Name", "restart": "If a rank fails", "topology": "Packed into",
    "compute_domain": "NVLink ComputeDomain", "gpu_equivalents": "GPU equivalents", "replicas": "Replicas",
    "priority": "Priority and preemption", "min_runtime": "Minimum runtime", "grace": "Checkpoint grace",
}


def humanise(value: str) -> str:
    """Last resort for a value no vocabulary knows: never show the underscore form."""
    return str(value).replace("_", " ")

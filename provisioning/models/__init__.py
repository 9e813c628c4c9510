"""GPU catalogue and cluster inventory, by concern (one module each); every model is imported here, so
`from provisioning.models import X` and the app registry see them all.

The catalogue (GpuModel, MigProfile) mirrors the shipped data files (`gpu.catalogue`). Clusters and
node pools are what the platform team declares; discovery records what the cluster reports beside it (Node, and
the discovered fields of Cluster and NodePool); MIG plans change node layouts.
"""
from .catalogue import GpuModel, MigProfile
from .clusters import Cluster, ClusterCredential
from .gangs import ClusterReconcileState, GangPolicy, GangStall, GangStallQuerySet, stall_notice_key
from .jobs import AppliedObject, ProvisioningJob
from .mig import MigPlan, MigPlanStep
from .pools import InventoryGeneration, Node, NodePool
from .quotas import TeamQuota
from .validators import (
    dra_feature_gates_validator,
    driver_version_validator,
    namespace_validator,
    pod_labels_validator,
)
from .waits import AdmissionBinding, AdmissionWorkload, RequestWait

__all__ = [
    "AdmissionBinding",
    "AdmissionWorkload",
    "AppliedObject",
    "Cluster",
    "ClusterCredential",
    "ClusterReconcileState",
    "GangPolicy",
    "GangStall",
    "GangStallQuerySet",
    "GpuModel",
    "InventoryGeneration",
    "MigPlan",
    "MigPlanStep",
    "MigProfile",
    "Node",
    "NodePool",
    "ProvisioningJob",
    "RequestWait",
    "TeamQuota",
    "dra_feature_gates_validator",
    "driver_version_validator",
    "namespace_validator",
    "pod_labels_validator",
    "stall_notice_key",
]

"""The provisioning admin, one module per concern; importing the package registers every admin (the admin's
autodiscovery imports `provisioning.admin`)."""
from .admission import AdmissionWorkloadAdmin
from .catalogue import GpuModelAdmin, MigProfileInline
from .clusters import ClusterAdmin, NodePoolInline
from .common import LIVE_CLUSTER_ONLY, discrepancy_html
from .gangs import ClusterReconcileStateAdmin, GangPolicyAdmin, GangStallAdmin, StallNoticeInline
from .jobs import AppliedObjectAdmin, ProvisioningJobAdmin
from .mig import MigPlanAdmin, MigPlanStepInline
from .pools import NodeAdmin, NodePoolAdmin
from .quotas import TeamQuotaAdmin

__all__ = [
    "LIVE_CLUSTER_ONLY",
    "AdmissionWorkloadAdmin",
    "AppliedObjectAdmin",
    "ClusterAdmin",
    "ClusterReconcileStateAdmin",
    "GangPolicyAdmin",
    "GangStallAdmin",
    "GpuModelAdmin",
    "MigPlanAdmin",
    "MigPlanStepInline",
    "MigProfileInline",
    "NodeAdmin",
    "NodePoolAdmin",
    "NodePoolInline",
    "ProvisioningJobAdmin",
    "StallNoticeInline",
    "TeamQuotaAdmin",
    "discrepancy_html",
]

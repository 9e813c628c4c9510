"""Clusters as the platform team declares them (with what discovery last saw beside), and their credentials."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from gpu import gangapi
from portal.encryption import EncryptedTextField
from portal.models import slug_validator
from portal.outbound import validate_api_server_url, validate_outbound_url

from ..choices import KUBERNETES_VERSIONS, Applier, CredentialSource, GangScheduler, SchedulingModel
from ..manifests.context import kubernetes_minor
from .validators import dra_feature_gates_validator, namespace_validator, pod_labels_validator


class Cluster(models.Model):
    name = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    description = models.CharField(max_length=200, blank=True)
    kubernetes_version = models.CharField(
        max_length=5, choices=[(v, v) for v in KUBERNETES_VERSIONS], default="1.35", help_text="minor version"
    )
    scheduling_model = models.CharField(
        max_length=20, choices=SchedulingModel.choices, default=SchedulingModel.DEVICE_PLUGIN
    )
    gang_scheduler = models.CharField(max_length=20, choices=GangScheduler.choices, default=GangScheduler.NONE)
    applier = models.CharField(max_length=20, choices=Applier.choices, default=Applier.GITOPS)
    api_server = models.URLField(blank=True, validators=[validate_api_server_url])
    gitops_repo = models.CharField(max_length=500, blank=True, help_text="Local path of the GitOps repository")
    # Kueue: the ClusterQueue each team's LocalQueue points at. KAI/Volcano: the parent queue name.
    gang_queue = models.CharField(max_length=63, blank=True)
    dra_feature_gates = models.JSONField(
        default=list, blank=True, validators=[dra_feature_gates_validator],
        help_text='NVIDIA DRA driver feature gates turned on in its Helm values, e.g. ["TimeSlicingSettings"]',
    )
    # Who may reach pods in team namespaces besides the team itself (NetworkPolicies, manifests/network.py).
    ingress_namespace = models.CharField(
        max_length=63, blank=True, validators=[namespace_validator],
        help_text="namespace of the ingress controller, admitted to inference pods' HTTP port; blank: none",
    )
    ingress_pod_labels = models.JSONField(
        default=dict, blank=True, validators=[pod_labels_validator],
        help_text='labels of the ingress controller\'s pods, e.g. {"app.kubernetes.io/name": "ingress-nginx"}; '
                  "empty: every pod of its namespace",
    )
    metrics_namespace = models.CharField(
        max_length=63, blank=True, validators=[namespace_validator],
        help_text="namespace of the metrics scraper (e.g. Prometheus), admitted to every port; blank: none",
    )
    metrics_pod_labels = models.JSONField(
        default=dict, blank=True, validators=[pod_labels_validator],
        help_text="labels of the scraper's pods; empty: every pod of its namespace",
    )
    # Idle GPUs and right-sizing (chargeback/idle/): where the DCGM exporter's metrics can be queried; blank: off.
    prometheus_url = models.URLField(
        blank=True, validators=[validate_outbound_url],
        help_text="Prometheus HTTP API base that scrapes the DCGM exporter, e.g. http://prometheus.monitoring:9090; "
                  "blank: idle GPUs are not looked for on this cluster",
    )
    gang_scheduler_owns_gpu_nodes = models.BooleanField(
        default=True,
        help_text="Volcano or KAI schedules every pod on the GPU nodes, so every pod the portal renders uses it "
        "(two schedulers must not hand out the same GPUs); turn off only if the gang scheduler has GPU nodes of its own",
    )
    dra_mps_support = models.BooleanField(
        default=False,
        help_text="the NVIDIA DRA driver runs with its MPSSupport feature gate (alpha, off by default): DRA pools "
        "may share GPUs through MPS",
    )
    # --- multi-node training: what the platform team turned on (rules in gpu/gangapi.py) ---
    feature_gates = models.JSONField(
        default=list, blank=True, help_text="Kubernetes feature gates turned on, e.g. [\"GenericWorkload\"]"
    )
    jobset_installed = models.BooleanField(
        default=False, help_text="JobSet (jobset.x-k8s.io/v1alpha2) runs here: a failed rank restarts the whole gang"
    )
    gang_topology_key = models.CharField(
        max_length=63, blank=True, help_text="node label a gang is packed into, e.g. nvidia.com/gpu.clique"
    )
    gang_topology_name = models.CharField(
        max_length=63, blank=True, help_text="KAI Topology object or Volcano HyperNode tier defining the domains"
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # --- what inventory discovery last saw; declared fields above are never overwritten ---
    discovered_kubernetes_version = models.CharField(max_length=40, blank=True, help_text="gitVersion, e.g. v1.35.2")
    discovered_gang_schedulers = models.JSONField(
        default=list, blank=True, help_text='installed gang schedulers: [{"backend", "api_group", "versions"}]'
    )
    dra_in_use = models.BooleanField(null=True, blank=True, help_text="GPU ResourceSlices seen; null: never synced")
    serves_admission_policies = models.BooleanField(
        null=True, blank=True,
        help_text="the API server serves admissionregistration.k8s.io/v1 validatingadmissionpolicies: without Kueue, "
                  "each team namespace gets one (docs/admission-check.md); null: never synced",
    )
    dra_device_classes = models.JSONField(
        default=list, blank=True, help_text='DRA DeviceClasses seen: [{"name", "extended_resource_name", "selectors"}]'
    )
    discrepancies = models.JSONField(
        default=list, blank=True, help_text='declared vs discovered: [{"field", "declared", "discovered", "message"}]'
    )
    last_synced_at = models.DateTimeField(null=True, blank=True, help_text="last successful inventory sync")
    last_sync_attempt_at = models.DateTimeField(null=True, blank=True)
    last_sync_error = models.TextField(blank=True, help_text="why the last sync did not happen; empty when it did")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        errors = {}
        gates = self.feature_gates
        if not isinstance(gates, list) or not all(isinstance(g, str) for g in gates):
            errors["feature_gates"] = "A list of feature gate names, e.g. [\"GenericWorkload\"]."
            gates = []
        elif unknown := sorted(set(gates) - set(gangapi.KNOWN_FEATURE_GATES)):
            errors["feature_gates"] = (
                f"Unknown feature gate(s) {', '.join(unknown)}; the portal reads "
                f"{', '.join(gangapi.KNOWN_FEATURE_GATES)}."
            )
        minor = kubernetes_minor(self.kubernetes_version) if self.kubernetes_version in KUBERNETES_VERSIONS else None
        if minor is not None and self.gang_scheduler == GangScheduler.NATIVE:
            refusal = gangapi.native_gang_refusal(minor, gates, self.name or "this cluster")
            if refusal and minor in gangapi.NATIVE_GATES_REQUIRED:
                errors.setdefault("feature_gates", refusal)
        if minor is not None:
            problem = gangapi.topology_refusal(
                self.gang_scheduler, minor, self.gang_topology_key, self.gang_topology_name, gates
            )
            if problem:
                errors.setdefault(problem[0], problem[1])
        for prefix in ("ingress", "metrics"):
            if getattr(self, f"{prefix}_pod_labels") and not getattr(self, f"{prefix}_namespace"):
                errors[f"{prefix}_namespace"] = "Name the namespace the pods with these labels run in."
        if errors:
            raise ValidationError(errors)


class ClusterCredential(models.Model):
    """How the portal authenticates to a cluster. Kept apart from Cluster so no serializer or admin form of Cluster
    can ever show it. Bound to the API server URL it was given for (`server`): once the cluster points elsewhere,
    it is not used until someone sets it again (provisioning.credentials)."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="credential")
    source = models.CharField(max_length=20, choices=CredentialSource.choices, default=CredentialSource.TOKEN)
    server = models.CharField(max_length=500, blank=True, help_text="the API server URL these were confirmed for")
    token = EncryptedTextField(blank=True)
    ca_cert = models.TextField(blank=True, help_text="PEM CA bundle of the API server")
    insecure_skip_tls_verify = models.BooleanField(default=False)
    kubeconfig_path = models.CharField(max_length=500, blank=True)
    kubeconfig_context = models.CharField(max_length=253, blank=True)
    secret_namespace = models.CharField(max_length=63, blank=True)
    secret_name = models.CharField(max_length=253, blank=True)
    secret_key = models.CharField(max_length=253, blank=True, default="token")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"credentials of {self.cluster}"

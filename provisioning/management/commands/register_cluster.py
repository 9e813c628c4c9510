from django.core.management.base import BaseCommand, CommandError

from provisioning.choices import KUBERNETES_VERSIONS, GangScheduler, SchedulingModel
from provisioning.services import cluster_register


class Command(BaseCommand):
    help = (
        "Register (or update) a cluster the portal provisions into: a Kubernetes API server (--server) or a "
        "local GitOps repository (--gitops-repo). Credentials are stored, never shown."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--server", help="Kubernetes API server URL, e.g. https://10.0.0.1:6443")
        target.add_argument("--gitops-repo", dest="gitops_repo", help="path of a local git repository")
        parser.add_argument("--token", default=None, help="bearer token of the portal's ServiceAccount")
        parser.add_argument("--ca-cert-file", dest="ca_cert_file", default=None, help="PEM file of the cluster CA")
        parser.add_argument("--insecure-skip-tls-verify", dest="insecure", action="store_true")
        parser.add_argument("--scheduling-model", dest="scheduling_model", choices=SchedulingModel.values)
        parser.add_argument("--gang-scheduler", dest="gang_scheduler", choices=GangScheduler.values)
        parser.add_argument("--kubernetes-version", dest="kubernetes_version", choices=KUBERNETES_VERSIONS)
        parser.add_argument("--feature-gate", dest="feature_gates", action="append", default=None,
                            help="a Kubernetes feature gate turned on in the cluster (repeat), e.g. GenericWorkload")
        parser.add_argument("--jobset", dest="jobset_installed", action="store_true", default=None,
                            help="the JobSet controller is installed: a failed rank restarts the whole gang")
        parser.add_argument("--gang-topology-key", dest="gang_topology_key",
                            help="node label a gang is packed into, e.g. nvidia.com/gpu.clique")
        parser.add_argument("--gang-topology-name", dest="gang_topology_name",
                            help="KAI Topology object or Volcano HyperNode tier defining the domains")

    def handle(self, *args, name, server, gitops_repo, token, ca_cert_file, insecure, **options):
        ca_cert = None
        if ca_cert_file:
            try:
                with open(ca_cert_file) as handle:
                    ca_cert = handle.read()
            except OSError as exc:
                raise CommandError(f"cannot read --ca-cert-file: {exc}") from exc
        names = ("scheduling_model", "gang_scheduler", "kubernetes_version", "feature_gates", "jobset_installed",
                 "gang_topology_key", "gang_topology_name")
        settings = {k: options[k] for k in names if options[k] is not None}
        try:
            cluster, created = cluster_register(
                name=name, server=server, gitops_repo=gitops_repo, token=token, ca_cert=ca_cert,
                insecure_skip_tls_verify=insecure, **settings,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        target = cluster.api_server or cluster.gitops_repo
        self.stdout.write(
            f"cluster {cluster.name} {'registered' if created else 'updated'}: {cluster.applier} -> {target} "
            f"(Kubernetes {cluster.kubernetes_version}, {cluster.scheduling_model}, gang: {cluster.gang_scheduler})"
        )

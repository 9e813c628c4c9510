from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from provisioning.choices import KUBERNETES_VERSIONS, CredentialSource, GangScheduler, SchedulingModel
from provisioning.kube.errors import KubeError
from provisioning.kube.sources import kubeconfig_connection
from provisioning.services import cluster_register


def _read(path: str, option: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as exc:
        raise CommandError(f"cannot read {option}: {exc}") from exc


class Command(BaseCommand):
    help = (
        "Register (or update) a cluster the portal provisions into: a Kubernetes API server (--server) or a "
        "local GitOps repository (--gitops-repo). Credentials are stored encrypted and never shown; a changed "
        "server clears them unless new ones are given. See docs/clusters-and-credentials.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        target = parser.add_mutually_exclusive_group()
        target.add_argument("--server", help="Kubernetes API server URL, e.g. https://10.0.0.1:6443")
        target.add_argument("--gitops-repo", dest="gitops_repo", help="path of a local git repository")
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--token", default=None, help="bearer token of the portal's ServiceAccount")
        source.add_argument("--token-file", dest="token_file", default=None, help="file holding that token")
        source.add_argument("--in-cluster", dest="in_cluster", action="store_true",
                            help="use the portal pod's own service account (its cluster; --server defaults to it)")
        source.add_argument("--kubeconfig", default=None,
                            help="kubeconfig file on the portal's hosts (--server defaults to its context's)")
        source.add_argument("--secret", default=None, metavar="NAMESPACE/NAME",
                            help="a Secret holding the token, read with the pod's service account")
        parser.add_argument("--context", default="", help="kubeconfig context (default: its current-context)")
        parser.add_argument("--secret-key", dest="secret_key", default="token", help="key of the token in --secret")
        parser.add_argument("--ca-cert-file", dest="ca_cert_file", default=None, help="PEM file of the cluster CA")
        parser.add_argument("--insecure-skip-tls-verify", dest="insecure", action="store_true",
                            help="do not verify the API server's certificate (also allows plain http); logged")
        parser.add_argument("--scheduling-model", dest="scheduling_model", choices=SchedulingModel.values)
        parser.add_argument("--gang-scheduler", dest="gang_scheduler", choices=GangScheduler.values)
        parser.add_argument("--kubernetes-version", dest="kubernetes_version", choices=KUBERNETES_VERSIONS)
        # Who may reach team namespaces besides the team (NetworkPolicies; docs/network-isolation.md).
        for peer, what in (("ingress", "the ingress controller"), ("metrics", "the metrics scraper")):
            parser.add_argument(f"--{peer}-namespace", dest=f"{peer}_namespace", help=f"namespace of {what}")
            parser.add_argument(f"--{peer}-pod-label", dest=f"{peer}_pod_labels", action="append", default=None,
                                metavar="KEY=VALUE", help=f"a label of {what}'s pods (repeat for more)")
        parser.add_argument("--prometheus-url", dest="prometheus_url", default=None,
                            help="Prometheus that scrapes the DCGM exporter (idle GPUs, right-sizing); '' turns it off")
        parser.add_argument("--feature-gate", dest="feature_gates", action="append", default=None,
                            help="a Kubernetes feature gate turned on in the cluster (repeat), e.g. GenericWorkload")
        parser.add_argument("--jobset", dest="jobset_installed", action="store_true", default=None,
                            help="the JobSet controller is installed: a failed rank restarts the whole gang")
        parser.add_argument("--gang-topology-key", dest="gang_topology_key",
                            help="node label a gang is packed into, e.g. nvidia.com/gpu.clique")
        parser.add_argument("--gang-topology-name", dest="gang_topology_name",
                            help="KAI Topology object or Volcano HyperNode tier defining the domains")

    def handle(self, *args, name, server, gitops_repo, **options):
        credentials = self._credentials(options)
        if credentials and credentials["source"] == CredentialSource.IN_CLUSTER and not (server or gitops_repo):
            server = settings.PORTAL_IN_CLUSTER_SERVER
            if not server:
                raise CommandError("--in-cluster: not running in a pod and PORTAL_IN_CLUSTER_SERVER is empty")
        if credentials and credentials["source"] == CredentialSource.KUBECONFIG and not (server or gitops_repo):
            try:
                server = kubeconfig_connection(path=credentials["kubeconfig_path"], context=options["context"],
                                               request_timeout=1).server
            except KubeError as exc:
                raise CommandError(str(exc)) from exc
        if credentials and gitops_repo:
            raise CommandError("credentials are for --server clusters, not GitOps repositories")
        if options["insecure"]:
            self.stderr.write(f"warning: TLS verification is skipped for cluster {name} (--insecure-skip-tls-verify)")
        fields = {k: options[k] for k in ("scheduling_model", "gang_scheduler", "kubernetes_version") if options[k]}
        fields |= {k: options[k] for k in ("ingress_namespace", "metrics_namespace", "prometheus_url", "feature_gates", "jobset_installed",
                                           "gang_topology_key", "gang_topology_name") if options[k] is not None}
        for key in ("ingress_pod_labels", "metrics_pod_labels"):
            if options[key] is not None:
                pairs = [item.partition("=") for item in options[key]]
                if any(not sep for _, sep, _ in pairs):
                    raise CommandError(f"--{key.replace('_', '-')[:-1]} takes KEY=VALUE")
                fields[key] = {k: v for k, _, v in pairs}
        try:
            cluster, created, cleared = cluster_register(name=name, server=server, gitops_repo=gitops_repo,
                                                         credentials=credentials, **fields)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        target = cluster.api_server or cluster.gitops_repo
        self.stdout.write(
            f"cluster {cluster.name} {'registered' if created else 'updated'}: {cluster.applier} -> {target} "
            f"(Kubernetes {cluster.kubernetes_version}, {cluster.scheduling_model}, gang: {cluster.gang_scheduler})"
        )
        if cleared:
            self.stderr.write(f"warning: the API server of {cluster.name} changed, so its credentials were cleared; "
                              "run register_cluster again with credentials for the new server")

    def _credentials(self, options) -> dict | None:
        """The keyword arguments of cluster_credentials_set, or None when the command names no credentials."""
        ca_cert = _read(options["ca_cert_file"], "--ca-cert-file") if options["ca_cert_file"] else None
        common = {"ca_cert": ca_cert, "insecure_skip_tls_verify": options["insecure"]}
        if options["in_cluster"]:
            return {"source": CredentialSource.IN_CLUSTER, **common}
        if options["kubeconfig"]:
            return {"source": CredentialSource.KUBECONFIG, "kubeconfig_path": options["kubeconfig"],
                    "kubeconfig_context": options["context"], **common}
        if options["secret"]:
            namespace, _, secret_name = options["secret"].partition("/")
            if not namespace or not secret_name:
                raise CommandError("--secret takes NAMESPACE/NAME")
            return {"source": CredentialSource.SECRET, "secret_namespace": namespace, "secret_name": secret_name,
                    "secret_key": options["secret_key"], **common}
        token = options["token"]
        if options["token_file"]:
            token = _read(options["token_file"], "--token-file").strip()
        if token is None and ca_cert is None and not options["insecure"]:
            return None
        return {"source": CredentialSource.TOKEN, "token": token, **common}

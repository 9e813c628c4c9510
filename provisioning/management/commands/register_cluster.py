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
        # Who may reach team namespaces besides the team (NetworkPolicies; docs/network-isolation.md).
        for peer, what in (("ingress", "the ingress controller"), ("metrics", "the metrics scraper")):
            parser.add_argument(f"--{peer}-namespace", dest=f"{peer}_namespace", help=f"namespace of {what}")
            parser.add_argument(f"--{peer}-pod-label", dest=f"{peer}_pod_labels", action="append", default=None,
                                metavar="KEY=VALUE", help=f"a label of {what}'s pods (repeat for more)")

    def handle(self, *args, name, server, gitops_repo, token, ca_cert_file, insecure, **options):
        ca_cert = None
        if ca_cert_file:
            try:
                with open(ca_cert_file) as handle:
                    ca_cert = handle.read()
            except OSError as exc:
                raise CommandError(f"cannot read --ca-cert-file: {exc}") from exc
        settings = {k: options[k] for k in ("scheduling_model", "gang_scheduler", "kubernetes_version",
                                            "ingress_namespace", "metrics_namespace") if options[k] is not None}
        for key in ("ingress_pod_labels", "metrics_pod_labels"):
            if options[key] is not None:
                pairs = [item.partition("=") for item in options[key]]
                if any(not sep for _, sep, _ in pairs):
                    raise CommandError(f"--{key.replace('_', '-')[:-1]} takes KEY=VALUE")
                settings[key] = {k: v for k, _, v in pairs}
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

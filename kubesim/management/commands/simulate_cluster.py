"""`manage.py simulate_cluster`: a simulated GPU cluster for the demo and for evaluation (docs/simulated-cluster.md).

Serves the fake Kubernetes API on a fixed loopback port with a CA of its own, seeds the GPU nodes, registers itself
through the normal `register_cluster` command, runs inventory sync, then plays the cluster's controllers until
stopped (kubesim.kubelet). It is a development tool: the portal treats it as any other cluster.
"""
from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from kubesim.kubelet import Simulation
from kubesim.runner import register_and_sync, seed_kueue, serve_and_seed, write_kubeconfig
from kubesim.scenario import MIG_SECONDS_PER_GPU, Scenario


def _name_seconds(value: str) -> tuple[str, float]:
    name, sep, seconds = value.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, float(seconds)
    except ValueError:
        raise CommandError(f"--run-seconds-for takes NAME=SECONDS, not {value!r}") from None


class Command(BaseCommand):
    help = (
        "Run a simulated GPU cluster: a Kubernetes API stand-in on 127.0.0.1:<port> with GPU nodes of every pool "
        "kind, registered as cluster <name> (register_cluster) with inventory synced, and a simulated scheduler, "
        "kubelet and mig-manager moving pods and MIG layouts along. Runs until stopped (Ctrl-C, SIGTERM)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", default="gpu-east", help="cluster name to register (default: gpu-east, the "
                                                               "demo's main cluster)")
        parser.add_argument("--port", type=int, default=16443, help="loopback port of the API server (16443)")
        parser.add_argument("--ca-dir", default="var/simulator", help="where its CA and certificate are written")
        parser.add_argument("--tick-seconds", type=float, default=1.0, help="how often the loop runs (1 s)")
        parser.add_argument("--start-seconds", type=float, default=5.0, help="bound pod -> Running (5 s)")
        parser.add_argument("--run-seconds", type=float, default=120.0, help="a Job's pod Running -> Succeeded")
        parser.add_argument("--run-seconds-for", action="append", default=[], metavar="NAME=SECONDS",
                            help="run time of the Jobs whose name starts with NAME (repeat)")
        parser.add_argument("--stall-gang", action="append", default=[], metavar="NAME",
                            help="scenario: the last rank of gangs whose name starts with NAME stays Unschedulable")
        parser.add_argument("--mig-seconds-per-gpu", type=float, default=MIG_SECONDS_PER_GPU,
                            help="mig-manager's reconfiguration time per GPU before --time-scale (45 s)")
        parser.add_argument("--time-scale", type=float, default=1.0, help="scales the MIG delay (demo: 0.05)")
        parser.add_argument("--demo-flows", action="store_true",
                            help="once registered, submit and approve the demo requests that run on it")
        parser.add_argument("--kueue", action="store_true",
                            help="a Kueue cluster: register it with --gang-scheduler kueue (the portal installs its "
                                 "admission check there) and seed the team ClusterQueue and each team's LocalQueue")
        parser.add_argument("--ticks", type=int, default=0, help="stop after this many ticks (0: run until stopped)")

    def handle(self, *args, **options):
        scenario = Scenario(
            start_seconds=options["start_seconds"], run_seconds=options["run_seconds"],
            run_seconds_by_name=tuple(_name_seconds(v) for v in options["run_seconds_for"]),
            stall_gangs=tuple(options["stall_gang"]), mig_seconds_per_gpu=options["mig_seconds_per_gpu"],
            time_scale=options["time_scale"],
        )  # fmt: skip
        # A Kueue cluster leaves the alpha Workload API off (as clusters do by default), so that `kubectl get
        # workloads` means Kueue's.
        fake = serve_and_seed(port=options["port"], ca_dir=options["ca_dir"], alpha_apis=not options["kueue"])
        stop = threading.Event()
        previous = {signum: signal.signal(signum, lambda *_: stop.set()) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.stdout.write(f"simulated cluster serving {fake.url} (CA {fake.ca_file})")
            kubeconfig = write_kubeconfig(fake, directory=options["ca_dir"], name=options["name"])
            if options["kueue"]:
                from portal.models import Team
                from provisioning.manifests.names import team_namespace

                seed_kueue(fake, team_namespaces=[team_namespace(slug) for slug in
                                                  Team.objects.order_by("slug").values_list("slug", flat=True)])
            register_and_sync(fake, name=options["name"], gang_scheduler="kueue" if options["kueue"] else None,
                              stdout=self.stdout, stderr=self.stderr)
            if options["demo_flows"]:
                from demo.data import load_demo_flows

                self.stdout.write(load_demo_flows(cluster_name=options["name"]))
            simulation = Simulation(fake, scenario)
            ticks = 0
            self.stdout.write(f"kubectl: export KUBECONFIG={kubeconfig}")
            self.stdout.write("simulated cluster running (Ctrl-C stops it)")
            self.stdout.flush()
            while not stop.is_set():
                simulation.tick()
                ticks += 1
                if options["ticks"] and ticks >= options["ticks"]:
                    break
                stop.wait(options["tick_seconds"])
        finally:
            fake.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

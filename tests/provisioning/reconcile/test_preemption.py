"""Preemption end to end on the simulated cluster: a development pod holds the last free GPU of the pool; a
production inference request is approved; kubesim's scheduler preempts the development pod, which gets its grace
period before it stops; the inference runs. The reconciler (LIST/WATCH over HTTPS) records who preempted the
development request and why, its owner is notified once however often the cluster is reconciled, and the
development run's GPU-hours are the report's "preempted" line for its team (page, API and CSV).

Priorities are the shipped policy's (docs/preemption.md), rendered and applied by the portal: the PriorityClasses,
the pods' `priorityClassName` and `terminationGracePeriodSeconds`. Only the GPU holder of no team gets its class over
HTTPS from the test.
"""
from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command

from chargeback.models import RateCard, UsageInterval
from chargeback.services import usage_collect
from workflows.services import request_approve, request_submit
from kubesim import nodes as k
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario
from portal.models import Notice
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.inventory_sync import inventory_sync
from provisioning.kube.client import KubeClient
from provisioning.kube.connection import ClusterConnection
from provisioning.models import Cluster
from provisioning.reconcile import cluster_status_reconcile
from provisioning.wait_refresh import request_wait_refresh

pytestmark = pytest.mark.django_db

NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "latency_sensitive",
            "gpu_memory_gb": 40, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
SERVE = {"workload_class": "inference", "tenancy": "dedicated", "latency": "latency_sensitive", "gpu_memory_gb": 60,
         "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
GRACE = 300  # the shipped policy's checkpoint grace for development (docs/preemption.md)
DEV_CLASS, SERVE_CLASS = "gpu-portal-development-never-preempts", "gpu-portal-production-inference"


class Clock:
    """The simulated cluster's time (seconds), which the reconciler reads as a datetime too."""

    def __init__(self) -> None:
        self.now = (datetime.now(UTC) - timedelta(hours=3)).replace(microsecond=0).timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def moment(self) -> datetime:
        return datetime.fromtimestamp(self.now, UTC)


def _priority_class(name: str, value: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": f"{name} work"}


def _deployment_of(fake, gpu_request) -> dict:
    [deployment] = [d for d in fake.find("apps/v1", "Deployment")
                    if d["metadata"]["labels"].get("gpu-portal.io/request-id") == str(gpu_request.pk)]
    return deployment


def _pods_of(fake, gpu_request) -> list[dict]:
    return fake.find("v1", "Pod", None, f"gpu-portal.io/request-id={gpu_request.pk}")


@pytest.fixture
def lab(start_fake_kube, eager_celery, team_a, team_b, engineer, engineer_b, platform_user,
        django_capture_on_commit_callbacks):
    fake = start_fake_kube(git_version="v1.35.2")
    engineer.email, team_a.notification_email = "eve@example.com", "team-a@example.com"
    engineer.save(update_fields=["email"])
    team_a.save(update_fields=["notification_email"])
    cluster_declare(name="gpu-lab", kubernetes_version="1.35", scheduling_model="device_plugin",
                    gang_scheduler="none", applier="gitops",
                    pools=[{"name": "h100-train", "gpu_model": "H100-80GB", "node_count": 1, "gpus_per_node": 8,
                            "sharing_mode": "exclusive", "node_selector": {"gpu-portal.io/pool": "h100-train"}}])
    call_command("register_cluster", "gpu-lab", "--server", fake.url, "--token", "t", "--ca-cert-file", fake.ca_file,
                 "--kubernetes-version", "1.35", stdout=StringIO())
    for team in ("gpu-team-a", "gpu-team-b", "gpu-burn-in"):
        fake.put(k.namespace(team))
    fake.put(k.h100_node("h100-train-0", taints=[]))
    cluster = Cluster.objects.get(name="gpu-lab")
    assert inventory_sync(cluster=cluster).status == "synced"
    for team in (team_a, team_b):
        team_quota_set(team=team, strategy="whole_gpu", gpu_equivalents=16)
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("3.00"),
                            currency="EUR", valid_from=datetime(2020, 1, 1, tzinfo=UTC).date())
    connection = ClusterConnection(server=fake.url, token="t", ca_cert=fake.ca_pem, request_timeout=10.0)
    with KubeClient(connection) as kube:  # the platform team's classes, over HTTPS
        classes = kube.resource("scheduling.k8s.io/v1", "PriorityClass")
        classes.create(body=_priority_class("platform-critical", 2_000_000))  # the burn-in's, not the portal's
    # Someone else's work holds 7 of the 8 GPUs and outranks everything: one GPU is left.
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "burn-in", "namespace": "gpu-burn-in",
                                                              "labels": {"app": "burn-in"}},
              "spec": {"priorityClassName": "platform-critical", "nodeName": "h100-train-0", "containers": [
                  {"name": "burn", "image": "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04",
                   "resources": {"limits": {"nvidia.com/gpu": "7"}}}]},
              "status": {"phase": "Running"}})

    def provision(user, team, name, answers):
        with django_capture_on_commit_callbacks(execute=True):
            gpu_request = request_submit(user=user, team=team, name=name, raw_answers=answers)
        gpu_request.refresh_from_db()
        if gpu_request.status == "pending_approval":
            with django_capture_on_commit_callbacks(execute=True):
                request_approve(user=platform_user, request_id=gpu_request.pk)
            gpu_request.refresh_from_db()
        assert gpu_request.status == "provisioning", gpu_request.events.last().comment
        return gpu_request

    clock = Clock()
    simulation = Simulation(fake, Scenario(start_seconds=5, run_seconds=36_000), clock)

    def reconcile():
        with django_capture_on_commit_callbacks(execute=True):  # notices are delivered after commit
            outcome = cluster_status_reconcile(cluster_id=cluster.pk, watch_seconds=0, clock=clock.moment)
        assert outcome.status == "ok", outcome.summary()

    def tick(seconds: float = 0):
        clock.advance(seconds)
        simulation.tick()

    return {"fake": fake, "cluster": cluster, "clock": clock, "provision": provision, "tick": tick,
            "reconcile": reconcile}


def test_production_inference_preempts_a_development_pod_after_its_grace_period(
        lab, engineer, engineer_b, team_a, team_b, client, api, finance_user):
    fake, tick, reconcile = lab["fake"], lab["tick"], lab["reconcile"]
    notebook = lab["provision"](engineer, team_a, "notebook", NOTEBOOK)
    assert (notebook.decision.strategy, notebook.decision.gpus_per_replica) == ("whole_gpu", 1)
    # The policy decided its priority, and the portal rendered it: the class (applied), the pods' class and grace.
    assert (notebook.decision.priority.tier, notebook.decision.priority.grace_seconds) == ("development", GRACE)
    template = _deployment_of(fake, notebook)["spec"]["template"]["spec"]
    assert (template["priorityClassName"], template["terminationGracePeriodSeconds"]) == (DEV_CLASS, GRACE)
    assert fake.get("scheduling.k8s.io/v1", "PriorityClass", DEV_CLASS)["preemptionPolicy"] == "Never"
    tick()
    tick(5)
    [dev_pod] = _pods_of(fake, notebook)
    assert dev_pod["status"]["phase"] == "Running" and dev_pod["spec"]["priority"] == 1000  # admission
    reconcile()
    notebook.refresh_from_db()
    assert notebook.status == "running"
    tick(2 * 3600)  # two hours of development
    assert usage_collect(cluster_name="gpu-lab")[0].status == "ok"

    serve = lab["provision"](engineer_b, team_b, "serve", SERVE)
    assert _deployment_of(fake, serve)["spec"]["template"]["spec"]["priorityClassName"] == SERVE_CLASS
    tick()
    dev_pod = fake.get("v1", "Pod", dev_pod["metadata"]["name"], dev_pod["metadata"]["namespace"])
    assert dev_pod["metadata"]["deletionGracePeriodSeconds"] == GRACE
    [serve_pod] = _pods_of(fake, serve)
    assert serve_pod["status"]["nominatedNodeName"] == "h100-train-0" and not serve_pod["spec"].get("nodeName")

    # Its wait explanation says why it is not running yet.
    request_wait_refresh(request_id=serve.pk)  # what the beat's wait refresh runs, now
    wait = api(engineer_b).get(f"/api/v1/requests/{serve.pk}/wait/").json()
    assert any("the scheduler preempted lower-priority pods there" in b["words"] and "h100-train-0" in b["words"]
               for b in wait["blockers"]), wait["blockers"]

    sent = len(mail.outbox)
    reconcile()
    [event] = notebook.events.filter(reason="Preempted")
    assert f"pod {serve_pod['metadata']['name']} of request #{serve.pk}" in event.comment
    assert f"priority class {SERVE_CLASS}, 100000)" in event.comment
    assert f"priority class {DEV_CLASS}, 1000)" in event.comment and f"{GRACE} s to checkpoint" in event.comment
    assert usage_collect(cluster_name="gpu-lab")[0].status == "ok"
    # The owner is told once: e-mail to the requester (and the team), whatever the number of cycles.
    tick(60)
    reconcile()
    reconcile()
    preempted_mail = [m for m in mail.outbox[sent:] if "preempted" in m.subject]
    assert len(preempted_mail) == 1 and engineer.email in preempted_mail[0].to
    assert f"request #{serve.pk}" in preempted_mail[0].body
    assert Notice.objects.filter(key__startswith="preempted:").count() == 1
    assert notebook.events.filter(reason="Preempted").count() == 1

    # The grace period runs out: the development pod stops, the inference binds and runs.
    tick(GRACE - 60 - 1)
    assert fake.get("v1", "Pod", dev_pod["metadata"]["name"], dev_pod["metadata"]["namespace"]) is not None
    tick(1)
    assert fake.get("v1", "Pod", dev_pod["metadata"]["name"], dev_pod["metadata"]["namespace"]) is None
    tick(5)
    [serve_pod] = _pods_of(fake, serve)
    assert serve_pod["status"]["phase"] == "Running" and serve_pod["spec"]["nodeName"] == "h100-train-0"
    reconcile()
    serve.refresh_from_db()
    assert serve.status == "running"
    assert usage_collect(cluster_name="gpu-lab")[0].status == "ok"
    assert len([m for m in mail.outbox[sent:] if "preempted" in m.subject]) == 1

    # The development owner sees why on the request page.
    client.force_login(engineer)
    page = client.get(f"/requests/{notebook.pk}/").content.decode()
    assert "was preempted by the scheduler" in page and f"request #{serve.pk}" in page

    # The preempted GPU-hours are their own line, per team.
    [interval] = UsageInterval.objects.filter(request=notebook)
    assert interval.category == "preempted" and interval.ended_at is not None
    today = datetime.now(UTC).date()
    period = {"start": today.replace(day=1).isoformat(),
              "end": (today.replace(day=1) + timedelta(days=32)).replace(day=1).isoformat()}
    rows = api(finance_user).get("/api/v1/chargeback/report/", {**period, "group_by": "team"}).json()["rows"]
    by_line = {(r["team"], r["category"]): Decimal(r["gpu_equivalent_hours"]) for r in rows}
    assert by_line[("team-a", "preempted")] >= Decimal(2) and ("team-a", "usage") not in by_line
    assert by_line[("team-b", "usage")] > 0 and ("team-b", "preempted") not in by_line
    report = b"".join(api(finance_user).get("/api/v1/chargeback/report/", {
        **period, "group_by": "team", "format": "csv"}).streaming_content).decode()
    lines = list(csv.DictReader(line for line in io.StringIO(report) if not line.startswith("#")))
    assert {(r["team"], r["category"]) for r in lines} == {("team-a", "preempted"), ("team-b", "usage")}
    client.force_login(finance_user)
    page = client.get("/chargeback/", {**period, "group_by": "team"}).content.decode()
    assert page.count('<tr class="category-preempted">') == 1

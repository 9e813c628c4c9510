"""Billing from what the cluster allocated, and credits for broken hardware, end to end on the simulated cluster:
given a Kubernetes 1.36 cluster whose GPUs the NVIDIA DRA driver serves (H200 MIG devices, B200 GPUs), requests
provisioned through the portal and run by kubesim (which allocates their claims), when usage is collected over the
API server, then a pod allocated a larger MIG profile than approved is billed for it and flagged, a training rank
that failed on a tainted GPU gets its last run credited while a rank that failed on a healthy GPU does not, and the
month's FOCUS export passes the FinOps Foundation's validator with the report's totals."""
from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime
from decimal import Decimal
from fractions import Fraction
from io import StringIO

import pytest
from django.core.management import call_command

from chargeback.models import HardwareCredit, RateCard, UsageInterval
from chargeback.periods import add_months
from chargeback.services import usage_collect
from workflows.services import request_approve, request_submit
from kubesim import dra
from kubesim import nodes as k
from kubesim.kubelet import Simulation
from kubesim.scenario import Scenario
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.inventory_sync import inventory_sync
from provisioning.models import Cluster
from tests.conftest import VALID_ANSWERS
from tests.support.focus_validator import problems, validate

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 150,
            "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
ATTR = "device.attributes['gpu.nvidia.com']"


class Clock:
    """The simulated cluster's time: two days into last month, so the month can be exported and closed."""

    def __init__(self) -> None:
        first = add_months(datetime.now(UTC).date().replace(day=1), -1)
        self.now = datetime(first.year, first.month, 3, 8, tzinfo=UTC).timestamp()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def stamp(self) -> str:
        return datetime.fromtimestamp(self.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def lab(start_fake_kube, eager_celery, team_a, engineer, platform_user, django_capture_on_commit_callbacks):
    fake = start_fake_kube(git_version="v1.36.1")
    cluster_declare(
        name="gpu-lab", kubernetes_version="1.36", scheduling_model="dra", gang_scheduler="native", applier="gitops",
        feature_gates=["GenericWorkload", "GangScheduling"],  # the native gang's alpha gates on 1.36 (KEP-4671)
        pools=[
            {"name": "b200-train", "gpu_model": "B200-180GB", "node_count": 1, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "node_selector": {"gpu-portal.io/pool": "b200-train"}},
            {"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 1, "gpus_per_node": 1, "sharing_mode": "mig",
             "mig_layout": "all-balanced", "node_selector": {"gpu-portal.io/pool": "h200-mig"}},
        ],
    )  # fmt: skip
    call_command("register_cluster", "gpu-lab", "--server", fake.url, "--token", "t", "--ca-cert-file", fake.ca_file,
                 "--kubernetes-version", "1.36", "--scheduling-model", "dra", stdout=StringIO())
    fake.put(k.namespace("gpu-team-a"))
    fake.put(k.dra_only_node("dra-b200-0", pool="b200-train"))
    fake.put(k.resource_slice("dra-b200-0"))
    fake.put(k.gpu_node("dra-h200-0", model="H200-141GB", pool="h200-mig", gpu_resources={}, taints=[],
                        extra_labels={"nvidia.com/mig.config": "all-balanced",
                                      "nvidia.com/gpu.deploy.device-plugin": "false"}))
    fake.put(k.resource_slice("dra-h200-0", model="H200-141GB", gpus=1, mig={"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}))
    # The chart's classes without extendedResourceName: pods get claims (kubesim does not simulate KEP-5004).
    fake.put(k.device_class("gpu.nvidia.com"))
    fake.put(k.device_class("mig.nvidia.com", device_type="mig"))
    assert inventory_sync(cluster=Cluster.objects.get(name="gpu-lab")).status == "synced"
    for strategy in ("whole_gpu", "mig"):
        team_quota_set(team=team_a, strategy=strategy, gpu_equivalents=64)
    for model, strategy, price in (("H200-141GB", "mig", "7.00"), ("B200-180GB", "whole_gpu", "4.2500")):
        RateCard.objects.create(gpu_model=model, strategy=strategy, price_per_equivalent_hour=Decimal(price),
                                currency="EUR", valid_from=date(2020, 1, 1))

    def provision(name, answers):
        gpu_request = request_submit(user=engineer, team=team_a, name=name, raw_answers=answers)
        with django_capture_on_commit_callbacks(execute=True):
            request_approve(user=platform_user, request_id=gpu_request.pk)
        gpu_request.refresh_from_db()
        assert gpu_request.status == "provisioning", gpu_request.events.last().comment
        return gpu_request

    serve, train = provision("serve", VALID_ANSWERS), provision("train", TRAINING)
    assert (serve.decision.mig_profile, train.decision.gpu_model) == ("1g.18gb", "B200-180GB")
    # Someone edits the serving claim template in the cluster: its pods now get a 2g.35gb slice.
    [template] = [t for t in fake.find("resource.k8s.io/v1", "ResourceClaimTemplate")
                  if t["metadata"]["labels"].get("gpu-portal.io/request-id") == str(serve.pk)]
    spec = template["spec"]
    request = spec["spec"]["devices"]["requests"][0]["exactly"]
    request["selectors"] = [{"cel": {"expression": s["cel"]["expression"].replace("1g.18gb", "2g.35gb")}}
                            for s in request["selectors"]]
    fake.put(template)

    clock = Clock()
    simulation = Simulation(fake, Scenario(start_seconds=5, run_seconds=36_000), clock)
    simulation.tick()
    clock.advance(5)
    simulation.tick()
    pods = fake.find("v1", "Pod", "gpu-team-a", "app.kubernetes.io/managed-by=gpu-portal")
    assert sorted(p["status"]["phase"] for p in pods) == ["Running", "Running", "Running"], [
        p["status"].get("conditions") for p in pods if p["status"]["phase"] != "Running"]
    clock.advance(3 * 3600)
    ranks = sorted((p for p in pods if p["metadata"]["labels"].get("gpu-portal.io/request-id") == str(train.pk)),
                   key=lambda p: p["metadata"]["name"])
    # Rank 0's first GPU has a fatal XID: the driver taints it and the rank fails.
    claim_name = ranks[0]["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = fake.get("resource.k8s.io/v1", "ResourceClaim", claim_name, "gpu-team-a")
    device = claim["status"]["allocation"]["devices"]["results"][0]
    assert dra.fail_device(fake, driver=device["driver"], pool=device["pool"], device=device["device"],
                           at=clock.stamp()) == [ranks[0]["metadata"]["name"]]
    # Rank 1 fails on healthy GPUs (its own bug).
    clock.advance(600)
    started = ranks[1]["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    fake.patch_status("v1", "Pod", ranks[1]["metadata"]["name"], "gpu-team-a", {"phase": "Failed", "containerStatuses": [
        {**ranks[1]["status"]["containerStatuses"][0], "ready": False, "started": False,
         "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": clock.stamp()}}}]})
    [collection] = usage_collect(cluster_name="gpu-lab")
    assert collection.status == "ok", collection.message
    month = datetime.fromtimestamp(clock.now, UTC).date().replace(day=1)
    return {"fake": fake, "serve": serve, "train": train, "ranks": ranks, "month": month}


def test_a_larger_mig_profile_than_approved_is_billed_as_allocated_and_flagged(lab, api, client, finance_user):
    interval = UsageInterval.objects.get(request=lab["serve"])
    assert (interval.strategy, interval.mig_profile, interval.devices) == ("mig", "2g.35gb", 1)
    assert interval.equivalents == Fraction(2, 7) and "allocation_mismatch" in interval.flags
    note = lab["serve"].events.get(reason="AllocationMismatch")
    assert "2g.35gb" in note.comment and "1g.18gb" in note.comment and "billed as allocated" in note.comment
    month = lab["month"]
    period = {"start": month.isoformat(), "end": add_months(month, 1).isoformat()}
    body = api(finance_user).get("/api/v1/chargeback/report/", {**period, "group_by": "request,mig_profile"}).json()
    [mismatch] = body["allocation_mismatches"]
    assert (mismatch["request"], mismatch["approved_mig_profile"], mismatch["billed_mig_profile"], mismatch["pods"]) == (
        lab["serve"].pk, "1g.18gb", "2g.35gb", 1)
    [row] = [r for r in body["rows"] if r["request"] == lab["serve"].pk]
    assert row["mig_profile"] == "2g.35gb"
    client.force_login(finance_user)
    page = client.get("/chargeback/", period)
    assert b'data-testid="allocation-mismatches"' in page.content and b'data-testid="focus-link"' in page.content
    # the other request's pods got what was approved: not flagged
    assert not any("allocation_mismatch" in i.flags for i in UsageInterval.objects.filter(request=lab["train"]))
    per_rank = lab["train"].decision.gpus_per_replica
    assert {(i.gpu_model, i.devices) for i in UsageInterval.objects.filter(request=lab["train"])} == {
        ("B200-180GB", per_rank)}


def test_a_run_failed_on_a_tainted_gpu_is_credited_and_a_healthy_failure_is_not(lab, api, finance_user):
    [credit] = HardwareCredit.objects.all()
    rank0 = UsageInterval.objects.get(pod_name=lab["ranks"][0]["metadata"]["name"])
    assert (credit.pod_uid, credit.started_at, credit.ended_at) == (rank0.pod_uid, rank0.started_at, rank0.ended_at)
    assert "gpu.nvidia.com/xid=79 (NoSchedule)" in credit.reason and "Unhealthy" in credit.reason
    assert {e["source"] for e in credit.evidence} == {"device_taint", "allocated_resources_status"}
    assert lab["train"].events.filter(reason="HardwareFaultCredit").count() == 1
    month = lab["month"]
    period = {"start": month.isoformat(), "end": add_months(month, 1).isoformat()}
    rows = api(finance_user).get("/api/v1/chargeback/report/", {**period, "group_by": "request"}).json()["rows"]
    [credit_row] = [r for r in rows if r["category"] == "credit"]
    hours = Decimal((rank0.ended_at - rank0.started_at).total_seconds()) / 3600 * rank0.devices
    assert rank0.devices == lab["train"].decision.gpus_per_replica
    assert Decimal(credit_row["gpu_equivalent_hours"]) == -hours.quantize(Decimal("0.000001"))
    assert Decimal(credit_row["cost"]) == -(hours * Decimal("4.25")).quantize(Decimal("0.01"))
    listed = api(finance_user).get("/api/v1/chargeback/credits/").json()["results"]
    assert [c["pod_name"] for c in listed] == [credit.pod_name]


def test_the_simulated_months_focus_export_passes_the_validator_with_the_reports_totals(lab, api, finance_user,
                                                                                         tmp_path):
    month = lab["month"]
    period = {"start": month.isoformat(), "end": add_months(month, 1).isoformat()}
    data = b"".join(api(finance_user).get("/api/v1/chargeback/focus/", period).streaming_content)
    path = tmp_path / "month.csv"
    path.write_bytes(data)
    assert problems(validate(path)) == {}
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert {r["ChargeCategory"] for r in rows} == {"Usage", "Credit"}
    report = b"".join(api(finance_user).get("/api/v1/chargeback/report/", {**period, "group_by": "", "format": "csv"})
                      .streaming_content).decode()
    totals = [r for r in csv.DictReader(line for line in io.StringIO(report) if not line.startswith("#"))]
    assert sum(Decimal(r["BilledCost"]) for r in rows) == sum(Decimal(r["cost"]) for r in totals)
    serve_rows = [r for r in rows if r["x_RequestId"] == str(lab["serve"].pk)]
    assert serve_rows and {(r["x_MigProfile"], r["x_AllocationMismatch"]) for r in serve_rows} == {("2g.35gb", "true")}
    [credit] = [r for r in rows if r["ChargeCategory"] == "Credit"]
    assert Decimal(credit["BilledCost"]) < 0 and credit["ConsumedQuantity"] == "" and credit["x_Category"] == "credit"

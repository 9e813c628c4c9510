"""Hardware-fault credits through the ingestion service and the admin: what counts as an unhealthy device (DRA
taints from the driver or a DeviceTaintRule, the kubelet's allocatedResourcesStatus, the node's allocatable below
capacity), what does not, the last run as the credited span, finance's reversal, and a month close that freezes
credits like the rest of the ledger (FOCUS rows included)."""
from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pytest

from chargeback.allocation import ClusterFacts
from chargeback.models import HardwareCredit, RateCard
from chargeback.selectors import report_rows
from chargeback.services import period_close, usage_ingest
from tests.chargeback.conftest import pod_for, utc

pytestmark = pytest.mark.django_db

NODE = "gpu-node-1"
DEVICE = ("gpu.nvidia.com", "b200-0", "gpu-3")


@pytest.fixture
def priced(requests_a):
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("3.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    return requests_a["whole"]


def failed(gpu_request, *, start, end, restarted_at=None, **extra):
    return pod_for(gpu_request, started_at=start, finished_at=end, phase="Failed", restarted_at=restarted_at, **extra)


def with_claim(pod, claim="train-0-gpu-x1y2z"):
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "train-gpu"}]
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim}]
    return pod


def claim(name="train-0-gpu-x1y2z", namespace="gpu-team-a"):
    driver, pool, device = DEVICE
    return {"metadata": {"name": name, "namespace": namespace}, "status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": driver, "pool": pool, "device": device}]}}}}


def node(capacity=8, allocatable=8):
    return {"metadata": {"name": NODE}, "status": {"capacity": {"nvidia.com/gpu": str(capacity)},
                                                   "allocatable": {"nvidia.com/gpu": str(allocatable)}}}


def taint_rule(effect="NoExecute", added="2026-11-03T10:01:00Z"):
    driver, pool, device = DEVICE
    return {"metadata": {"name": "gpu-3-broken"}, "spec": {
        "deviceSelector": {"driver": driver, "pool": pool, "device": device},
        "taint": {"key": "example.com/broken", "value": "psu", "effect": effect, "timeAdded": added}}}


def test_a_device_taint_rule_on_the_allocated_device_credits_the_last_run_only(priced):
    pod = with_claim(failed(priced, start=utc(2026, 11, 3, 6), restarted_at=utc(2026, 11, 3, 8),
                            end=utc(2026, 11, 3, 10)))
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 11), pods=[pod],
                 facts=ClusterFacts(claims=(claim(),), taint_rules=(taint_rule(),)))
    [credit] = HardwareCredit.objects.all()
    # the run before the restart is not credited: it ended for another reason (OOMKilled)
    assert (credit.started_at, credit.ended_at) == (utc(2026, 11, 3, 8), utc(2026, 11, 3, 10))
    assert "DeviceTaintRule gpu-3-broken" in credit.reason and credit.evidence[0]["source"] == "device_taint_rule"
    rows = {r["category"]: r for r in report_rows(user=None, start=date(2026, 11, 1), end=date(2026, 12, 1),
                                                   group_by=["request"], now=utc(2026, 12, 1))}
    usage, credit_row = rows["usage"], rows["credit"]
    assert (usage["category"], usage["cost"]) == ("usage", Decimal("24.00"))  # 2 GPUs x 4 h x 3.00
    assert (credit_row["category"], credit_row["cost"], credit_row["device_hours"]) == (
        "credit", Decimal("-12.00"), Decimal("-4.000000"))


@pytest.mark.parametrize("facts, status_health", [
    (ClusterFacts(nodes=(node(capacity=8, allocatable=7),)), None),  # the device plugin's unhealthy GPU on the node
    (ClusterFacts(), {"name": "nvidia.com/gpu", "resources": [{"resourceID": "GPU-1234", "health": "Unhealthy"}]}),
])
def test_a_device_plugin_pod_is_credited_from_the_node_or_its_own_device_health(priced, facts, status_health):
    pod = failed(priced, start=utc(2026, 11, 3, 8), end=utc(2026, 11, 3, 9))
    if status_health:
        pod["status"]["containerStatuses"][0]["allocatedResourcesStatus"] = [status_health]
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 10), pods=[pod], facts=facts)
    [credit] = HardwareCredit.objects.all()
    assert credit.evidence[0]["source"] == ("allocated_resources_status" if status_health else "node_allocatable")


@pytest.mark.parametrize("case", ["healthy", "informational taint", "taint long after", "succeeded", "healthy status"])
def test_nothing_is_credited_without_evidence_of_a_fault_at_the_time(priced, case):
    phase = "Succeeded" if case == "succeeded" else "Failed"
    pod = with_claim(pod_for(priced, started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 3, 10), phase=phase))
    rules = {"informational taint": (taint_rule(effect="None"),), "taint long after": (taint_rule(added="2026-11-03T12:00:00Z"),),
             "succeeded": (taint_rule(),)}.get(case, ())
    if case == "healthy status":
        pod["status"]["containerStatuses"][0]["allocatedResourcesStatus"] = [
            {"name": "claim:gpu/gpu", "resources": [{"resourceID": "/".join(DEVICE), "health": "Healthy"}]}]
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 13), pods=[pod],
                 facts=ClusterFacts(claims=(claim(),), taint_rules=rules, nodes=(node(),)))
    assert not HardwareCredit.objects.exists()


def test_reading_the_failed_pod_again_credits_it_once(priced):
    pod = failed(priced, start=utc(2026, 11, 3, 8), end=utc(2026, 11, 3, 9))
    facts = ClusterFacts(nodes=(node(allocatable=7),))
    for hour in (10, 11):
        result = usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, hour), pods=[pod], facts=facts)
    assert result.credits == 0 and HardwareCredit.objects.count() == 1
    assert priced.events.filter(reason="HardwareFaultCredit").count() == 1


def _focus(api, user, month: str) -> list[dict]:
    start = date.fromisoformat(f"{month}-01")
    end = date(start.year + start.month // 12, start.month % 12 + 1, 1)
    data = b"".join(api(user).get("/api/v1/chargeback/focus/", {"start": start, "end": end}).streaming_content)
    return list(csv.DictReader(io.StringIO(data.decode())))


def _lines(month_start: date, month_end: date, source: str) -> list[dict]:
    return report_rows(user=None, start=month_start, end=month_end, group_by=["request", "day"], now=utc(2026, 12, 1),
                       source=source)


def test_a_month_close_freezes_credits_and_a_later_reversal_or_credit_is_booked_in_the_next_month(
        priced, api, client, finance_user, engineer, platform_user):
    sep, octo, nov = date(2026, 9, 1), date(2026, 10, 1), date(2026, 11, 1)
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 9, 20), pods=[
        failed(priced, start=utc(2026, 9, 10, 8), end=utc(2026, 9, 10, 10), uid="a" * 36)],
        facts=ClusterFacts(nodes=(node(allocatable=7),)))
    period_close(month=sep, user=finance_user, now=utc(2026, 10, 2))
    frozen_report, frozen_focus = _lines(sep, octo, "rollups"), _focus(api, finance_user, "2026-09")
    assert any(r["category"] == "credit" for r in frozen_report)
    assert [r["ChargeCategory"] for r in frozen_focus if r["x_Category"] == "credit"] == ["Credit"]
    # A September failure seen only after the close: its credit is booked on 1 October.
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 10, 3), pods=[
        failed(priced, start=utc(2026, 9, 29, 8), end=utc(2026, 9, 29, 9), uid="b" * 36)],
        facts=ClusterFacts(nodes=(node(allocatable=7),)))
    first = HardwareCredit.objects.get(pod_uid="a" * 36)

    # Finance reverses the September credit in the admin (an engineer cannot; a reason is required).
    url = f"/admin/chargeback/hardwarecredit/{first.pk}/reverse/"
    client.force_login(engineer)
    assert client.post(url, {"reason": "not a fault"}).status_code == 302
    client.force_login(finance_user)
    assert client.post(url, {"reason": ""}).status_code == 200
    first.refresh_from_db()
    assert first.reversed_at is None
    assert client.post(url, {"reason": "the job's own NaN, not the GPU"}).status_code == 302
    first.refresh_from_db()
    assert (first.reversed_by, first.reversal_reason) == (finance_user, "the job's own NaN, not the GPU")
    assert client.post(url, {"reason": "again"}).status_code == 200  # already reversed: said, nothing changes

    assert _lines(sep, octo, "rollups") == frozen_report == _lines(sep, octo, "raw")
    assert _focus(api, finance_user, "2026-09") == frozen_focus
    october = {r["category"]: r for r in report_rows(user=None, start=octo, end=nov, group_by=[], now=utc(2026, 12, 1))}
    assert october["credit_reversal"]["cost"] == Decimal("12.00")  # September's credit given back, in October
    assert october["credit"]["cost"] == Decimal("-6.00")  # the late credit for 29 September
    assert _lines(octo, nov, "rollups") == _lines(octo, nov, "raw")
    reversal = [r for r in _focus(api, finance_user, "2026-10") if r["x_Category"] == "credit_reversal"]
    assert [(r["ChargeCategory"], r["ChargeClass"], r["BilledCost"]) for r in reversal] == [("Credit", "Correction", "12.00")]


def test_a_credit_reversed_while_its_month_is_open_just_goes(priced, client, platform_user):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 10), pods=[
        failed(priced, start=utc(2026, 11, 3, 8), end=utc(2026, 11, 3, 9))], facts=ClusterFacts(nodes=(node(allocatable=7),)))
    credit = HardwareCredit.objects.get()
    client.force_login(platform_user)
    assert b"reverse-credit" in client.get("/admin/chargeback/hardwarecredit/").content
    assert client.post(f"/admin/chargeback/hardwarecredit/{credit.pk}/reverse/", {"reason": "test run"}).status_code == 302
    categories = {r["category"] for r in report_rows(user=None, start=date(2026, 11, 1), end=date(2026, 12, 1),
                                                      group_by=[], now=utc(2026, 12, 1))}
    assert categories == {"usage"}
    assert client.get("/admin/chargeback/hardwarecredit/abc/reverse/").status_code == 404


def test_finance_reads_credits_and_engineers_only_their_teams(api, priced, finance_user, engineer_b, client):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 10), pods=[
        failed(priced, start=utc(2026, 11, 3, 8), end=utc(2026, 11, 3, 9))], facts=ClusterFacts(nodes=(node(allocatable=7),)))
    assert len(api(finance_user).get("/api/v1/chargeback/credits/").json()["results"]) == 1
    assert api(engineer_b).get("/api/v1/chargeback/credits/").json()["results"] == []
    client.force_login(finance_user)
    page = client.get("/admin/chargeback/hardwarecredit/")
    assert page.status_code == 200 and b"Failed on an unhealthy device" in page.content
    assert client.post("/admin/chargeback/hardwarecredit/add/", {}).status_code == 403  # finance edits nothing else

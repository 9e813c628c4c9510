"""The FOCUS export (GET /api/v1/chargeback/focus/): the FinOps Foundation's validator passes on it, its costs add
up to the report CSV's to the cent, it carries the portal's dimensions as x_ columns, and it is scoped and
validated like the report."""
from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chargeback.focus.columns import ADDED_IN, CUSTOM_COLUMNS, FOCUS_1_0
from chargeback.models import RateCard
from chargeback.services import usage_ingest
from tests.chargeback.conftest import make_request, pod_for, utc
from tests.support.focus_validator import problems, validate

pytestmark = pytest.mark.django_db

URL = "/api/v1/chargeback/focus/"
MONTH = {"start": "2026-11-01", "end": "2026-12-01"}


@pytest.fixture
def usage(requests_a, team_b, engineer_b):
    """Two teams, whole GPUs and MIG slices over a rate change, a pod still running at the month's end."""
    b_request = make_request(team_b, engineer_b, strategy="mig", gpu_model="H200-141GB", mig_profile="1g.18gb",
                             name="b-serving")
    RateCard.objects.create(gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.1234"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    RateCard.objects.create(gpu_model="H200-141GB", strategy="mig", price_per_equivalent_hour=Decimal("7.00"),
                            currency="EUR", valid_from=date(2026, 1, 1))
    RateCard.objects.create(gpu_model="H200-141GB", strategy="mig", price_per_equivalent_hour=Decimal("7.77"),
                            currency="EUR", valid_from=date(2026, 11, 15))
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 12, 2), pods=[
        pod_for(requests_a["whole"], started_at=utc(2026, 11, 3, 8, 17), finished_at=utc(2026, 11, 3, 9, 1, 7)),
        pod_for(requests_a["h200_1g"], started_at=utc(2026, 11, 3, 8), finished_at=utc(2026, 11, 20, 15, 33)),
        pod_for(requests_a["h200_3g"], started_at=utc(2026, 11, 29, 23)),
        pod_for(b_request, started_at=utc(2026, 11, 4, 8), finished_at=utc(2026, 11, 4, 15)),
        # no rate card for A100 MIG: unpriced, in the report but not in the FOCUS rows
        pod_for(requests_a["a100_1g"], started_at=utc(2026, 11, 5, 8), finished_at=utc(2026, 11, 5, 9)),
    ])
    return b_request


def _rows(response) -> tuple[list[str], list[dict]]:
    text = b"".join(response.streaming_content).decode()
    reader = csv.DictReader(io.StringIO(text))
    return reader.fieldnames, list(reader)


def _report_totals(api, user, params) -> dict[str, Decimal]:
    text = b"".join(api(user).get("/api/v1/chargeback/report/", {**params, "group_by": "", "format": "csv"})
                    .streaming_content).decode()
    rows = csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#"))
    totals: dict[str, Decimal] = {}
    for row in rows:
        if row["cost"]:
            totals[row["currency"]] = totals.get(row["currency"], Decimal(0)) + Decimal(row["cost"])
    return totals


def _focus_totals(rows) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for row in rows:
        totals[row["BillingCurrency"]] = totals.get(row["BillingCurrency"], Decimal(0)) + Decimal(row["BilledCost"])
    return totals


def test_the_validator_passes_and_the_costs_add_up_to_the_report_to_the_cent(api, usage, finance_user, tmp_path):
    response = api(finance_user).get(URL, MONTH)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="gpu-chargeback-focus-1.0_2026-11-01_2026-12-01.csv"'
    header, rows = _rows(response)
    path = tmp_path / "focus.csv"
    path.write_bytes(b"".join(api(finance_user).get(URL, MONTH).streaming_content))

    results = validate(path)

    assert problems(results) == {}
    assert {check for check, (status, _) in results.items() if status == "skipped"} == {
        "ResourceID_Required", "SkuPriceId_Nullable"}
    assert len(results) == 133  # every rule of the validator's FOCUS 1.0 set ran
    assert _focus_totals(rows) == _report_totals(api, finance_user, MONTH) == {"EUR": sum(
        (Decimal(r["BilledCost"]) for r in rows), Decimal(0))}
    assert all(r["BilledCost"] == r["EffectiveCost"] == r["ListCost"] == r["ContractedCost"] for r in rows)


def test_what_the_two_turned_off_rules_should_have_checked(api, usage, finance_user):
    """ResourceId (FOCUS 1.0 resourceid.md): present, a string, may be null (a line of no request). SkuPriceId
    (skupriceid.md): not null when ChargeClass is not "Correction" and ChargeCategory is "Usage" or "Purchase"."""
    header, rows = _rows(api(finance_user).get(URL, MONTH))
    assert "ResourceId" in header and "ResourceID" not in header
    assert {r["ResourceId"] for r in rows} == {f"gpu-portal.io/requests/{r['x_RequestId']}" for r in rows}
    must_have_price = [r for r in rows if r["ChargeCategory"] in ("Usage", "Purchase") and r["ChargeClass"] != "Correction"]
    assert must_have_price and all(r["SkuPriceId"] for r in must_have_price)
    # SkuPriceId names one price: every row of a SkuPriceId has the same unit price and SkuId
    by_price = {}
    for r in must_have_price:
        by_price.setdefault(r["SkuPriceId"], set()).add((r["SkuId"], r["ListUnitPrice"]))
    assert all(len(v) == 1 for v in by_price.values())
    assert {"H200-141GB/mig/2026-01-01", "H200-141GB/mig/2026-11-15", "H100-80GB/whole_gpu/2026-01-01"} == set(by_price)


def test_quantities_times_the_unit_price_make_the_cost_within_the_cents_rounding(api, usage, finance_user):
    _, rows = _rows(api(finance_user).get(URL, MONTH))
    for r in rows:
        exact = Decimal(r["PricingQuantity"]) * Decimal(r["ListUnitPrice"])
        assert abs(exact - Decimal(r["BilledCost"])) <= Decimal("0.005") + Decimal("0.0000005") * Decimal(r["ListUnitPrice"])
        assert r["PricingUnit"] == "GPU-Hours" and r["ConsumedUnit"] == "Device-Hours"
        assert r["ChargePeriodStart"].endswith("T00:00:00Z") and r["BillingPeriodStart"] == "2026-11-01T00:00:00Z"
    slice_day = next(r for r in rows if r["x_MigProfile"] == "1g.18gb" and r["ChargePeriodStart"] == "2026-11-04T00:00:00Z"
                     and r["x_Team"] == "team-a")
    # a 1g slice of an H200 for a whole day: 24 device-hours, 24/7 GPU-hours
    assert (slice_day["ConsumedQuantity"], slice_day["PricingQuantity"]) == ("24.000000", "3.428571")


def test_the_portals_dimensions_are_x_columns_and_provider_tags(api, usage, finance_user):
    header, rows = _rows(api(finance_user).get(URL, MONTH))
    assert header == [*FOCUS_1_0, *CUSTOM_COLUMNS]
    assert all(c.startswith("x_") for c in header[len(FOCUS_1_0):])
    b_row = next(r for r in rows if r["x_Team"] == "team-b")
    assert (b_row["x_RequestName"], b_row["x_SharingStrategy"], b_row["x_GpuModel"], b_row["x_MigProfile"],
            b_row["x_Cluster"], b_row["SubAccountId"], b_row["x_AllocationMismatch"]) == (
        "b-serving", "mig", "H200-141GB", "1g.18gb", "gpu-east", "team-b", "false")
    assert '"gpu-portal.io/team":"team-b"' in b_row["Tags"]
    assert not any(r["x_GpuModel"] == "A100-80GB" for r in rows)  # unpriced: no FOCUS row


def test_newer_versions_add_their_columns(api, usage, finance_user):
    header, rows = _rows(api(finance_user).get(URL, {**MONTH, "version": "1.2"}))
    assert set(ADDED_IN["1.1"]) | set(ADDED_IN["1.2"]) <= set(header)
    assert {r["ServiceSubcategory"] for r in rows} == {"Containers"}
    assert all(r["PricingCurrency"] == r["BillingCurrency"] for r in rows)
    header_11, _ = _rows(api(finance_user).get(URL, {**MONTH, "version": "1.1"}))
    assert set(ADDED_IN["1.1"]) <= set(header_11) and not set(ADDED_IN["1.2"]) & set(header_11)


def test_an_engineer_exports_only_their_teams_and_anonymous_nothing(api, usage, engineer, engineer_b):
    assert api().get(URL, MONTH).status_code == 401
    _, rows_a = _rows(api(engineer).get(URL, MONTH))
    _, rows_b = _rows(api(engineer_b).get(URL, MONTH))
    assert {r["x_Team"] for r in rows_a} == {"team-a"} and {r["x_Team"] for r in rows_b} == {"team-b"}
    _, asked = _rows(api(engineer_b).get(URL, {**MONTH, "team": "team-a"}))
    assert asked == []


@pytest.mark.parametrize("query, field", [
    ({"start": "2026-11-01"}, "end"),
    ({"start": "2026-12-01", "end": "2026-11-01"}, "end"),
    ({**MONTH, "version": "0.5"}, "version"),
    ({**MONTH, "request": "x"}, "request"),
    ({"start": "2026-13-01", "end": "2026-12-01"}, "start"),
])
def test_bad_input_names_the_field(api, finance_user, query, field):
    response = api(finance_user).get(URL, query)
    assert response.status_code == 400
    assert field in response.json()


def test_the_export_streams_in_a_constant_number_of_queries(api, usage, finance_user, requests_a):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            b"".join(api(finance_user).get(URL, MONTH).streaming_content)
        return len(queries)

    before = count()
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 12, 2), pods=[
        pod_for(requests_a["whole"], started_at=utc(2026, 11, d, 1), finished_at=utc(2026, 11, d, 2)) for d in range(6, 16)])
    assert count() == before

"""FOCUS columns and how one line of the chargeback ledger becomes one FOCUS row. Pure Python: no Django.

Column IDs, nullability and allowed values are FOCUS 1.0's (FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec, tag v1.0,
`specification/columns/*.md`); 1.1 and 1.2 only add columns (tags v1.1, v1.2), offered as an option. Columns are
in alphabetical order, the portal's own dimensions after them with the `x_` prefix custom columns must carry
(`specification/attributes/column_naming_and_ordering.md`).

How the portal maps onto FOCUS (docs/chargeback.md, "FOCUS export"):

* one row per line of the ledger (request x UTC day x category x rate segment, cost rounded to the cent once):
  the rows add up to the report's totals to the cent;
* BilledCost = EffectiveCost = ListCost = ContractedCost = the line's cost: one published price per GPU model and
  strategy (the rate card), no discounts, no commitments;
* PricingQuantity is GPU-equivalent hours ("GPU-Hours", what the rate card prices), ConsumedQuantity the device
  hours the pods held ("Device-Hours": a MIG slice or a time-sliced replica counts as one device);
* usage, waste, idle and preempted time are ChargeCategory "Usage"; late data booked for a closed month (adjustment lines) is
  "Usage" with ChargeClass "Correction"; a hardware-fault credit is "Credit", its reversal after the credited
  month closed a "Credit" "Correction";
* BillingAccount is the cost centre (what finance charges), SubAccount the team, Resource the GPU request, SKU the
  GPU model x sharing strategy, SKU price the rate card (model x strategy x valid_from).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal

FOCUS_1_0 = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd",
    "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName",
    "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity", "ConsumedUnit", "ContractedCost",
    "ContractedUnitPrice", "EffectiveCost", "InvoiceIssuer", "ListCost", "ListUnitPrice", "PricingCategory",
    "PricingQuantity", "PricingUnit", "Provider", "Publisher", "RegionId", "RegionName", "ResourceId",
    "ResourceName", "ResourceType", "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId",
    "SubAccountName", "Tags",
)
ADDED_IN = {
    "1.1": ("CapacityReservationId", "CapacityReservationStatus", "CommitmentDiscountQuantity",
            "CommitmentDiscountUnit", "ServiceSubcategory", "SkuMeter", "SkuPriceDetails"),
    "1.2": ("BillingAccountType", "InvoiceId", "PricingCurrency", "PricingCurrencyContractedUnitPrice",
            "PricingCurrencyEffectiveCost", "PricingCurrencyListUnitPrice", "SubAccountType"),
}
VERSIONS = ("1.0", "1.1", "1.2")
DEFAULT_VERSION = "1.0"
CUSTOM_COLUMNS = (
    "x_Team", "x_CostCenter", "x_RequestId", "x_RequestName", "x_Cluster", "x_SharingStrategy", "x_GpuModel",
    "x_MigProfile", "x_Category", "x_DeviceHours", "x_GpuEquivalentHours", "x_AllocationMismatch",
)

USAGE_CATEGORIES = ("usage", "waste", "idle", "preempted")
CORRECTION_CATEGORIES = ("adjustment", "waste_adjustment", "idle_adjustment", "credit_reversal")
CREDIT_CATEGORIES = ("credit", "credit_reversal")
_DESCRIPTIONS = {
    "usage": "GPU time",
    "waste": "GPU time burnt by a stalled gang",
    "idle": "Idle GPU time (paid for, unused)",
    "preempted": "GPU time of a run preempted for higher-priority work",
    "adjustment": "Late GPU time for a closed month",
    "waste_adjustment": "Late stalled-gang time for a closed month",
    "idle_adjustment": "Late idle GPU time for a closed month",
    "credit": "Credit: GPU time lost to a hardware fault",
    "credit_reversal": "Credit for a hardware fault reversed by finance",
}
_STRATEGY_WORDS = {"whole_gpu": "whole GPU", "mig": "MIG", "time_slicing": "time-sliced", "mps": "MPS"}


def columns(version: str = DEFAULT_VERSION) -> tuple[str, ...]:
    """The header of an export: FOCUS columns of `version` (1.0 plus what later versions add), then the portal's."""
    focus = set(FOCUS_1_0)
    for added_in, names in ADDED_IN.items():
        if tuple(map(int, added_in.split("."))) <= tuple(map(int, version.split("."))):
            focus.update(names)
    return (*sorted(focus), *CUSTOM_COLUMNS)


@dataclass(frozen=True)
class Line:
    """One line of the ledger as the export reads it (chargeback.focus.query)."""

    day: datetime
    category: str
    currency: str
    segment: datetime | None
    cost: Decimal
    device_hours: Decimal
    gpu_equivalent_hours: Decimal
    price: Decimal | None
    team: str | None
    team_name: str | None
    cost_center: str
    cluster: str
    strategy: str
    gpu_model: str
    mig_profile: str
    request_id: int | None
    request_name: str | None
    allocation_mismatch: bool


@dataclass(frozen=True)
class Provider:
    """Who bills: FOCUS's Provider, Publisher and InvoiceIssuer, and the prefix of the portal's tag keys."""

    name: str
    tag_prefix: str


def timestamp(moment: datetime) -> str:
    """FOCUS date/time format: extended ISO 8601 in UTC with a Z (`specification/attributes/datetime_format.md`)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _month(day: datetime) -> tuple[datetime, datetime]:
    start = day.astimezone(timezone.utc).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return start, (start + timedelta(days=32)).replace(day=1)


def sku_id(line: Line) -> str:
    return f"{line.gpu_model}/{line.strategy}"


def sku_price_id(line: Line) -> str:
    """One rate card: the model and strategy's price in force from its valid_from (a card starts at 00:00 UTC)."""
    return f"{sku_id(line)}/{line.segment:%Y-%m-%d}"


def tags(line: Line, provider: Provider) -> str:
    """Provider-defined tags (KeyValueFormat, a JSON object), keys prefixed as the spec asks of a provider."""
    p = provider.tag_prefix
    values = {"team": line.team, "cost-center": line.cost_center or None, "cluster": line.cluster,
              "request-id": str(line.request_id) if line.request_id else None, "strategy": line.strategy,
              "gpu-model": line.gpu_model, "mig-profile": line.mig_profile or None}
    return json.dumps({f"{p}/{k}": v for k, v in values.items() if v is not None}, sort_keys=True,
                      separators=(",", ":"))


def describe(line: Line) -> str:
    what = f"{line.gpu_model} {_STRATEGY_WORDS.get(line.strategy, line.strategy)}"
    if line.mig_profile:
        what += f" {line.mig_profile}"
    request = f", request {line.request_id}" + (f" ({line.request_name})" if line.request_name else "") \
        if line.request_id else ""
    return f"{_DESCRIPTIONS.get(line.category, line.category)}: {what}{request}"


def row(line: Line, *, provider: Provider, version: str = DEFAULT_VERSION) -> dict:
    """One FOCUS row (column -> value; None is an empty cell) for a priced line of the ledger."""
    credit = line.category in CREDIT_CATEGORIES
    usage = not credit
    billing_start, billing_end = _month(line.day)
    account = line.cost_center or line.team or "unassigned"
    values = {
        "AvailabilityZone": None,
        "BilledCost": line.cost, "EffectiveCost": line.cost, "ListCost": line.cost, "ContractedCost": line.cost,
        "BillingAccountId": account, "BillingAccountName": account, "BillingCurrency": line.currency,
        "BillingPeriodStart": timestamp(billing_start), "BillingPeriodEnd": timestamp(billing_end),
        "ChargeCategory": "Credit" if credit else "Usage",
        "ChargeClass": "Correction" if line.category in CORRECTION_CATEGORIES else None,
        "ChargeDescription": describe(line),
        "ChargeFrequency": "One-Time" if credit else "Usage-Based",
        "ChargePeriodStart": timestamp(line.day), "ChargePeriodEnd": timestamp(line.day + timedelta(days=1)),
        "CommitmentDiscountCategory": None, "CommitmentDiscountId": None, "CommitmentDiscountName": None,
        "CommitmentDiscountStatus": None, "CommitmentDiscountType": None,
        # ConsumedQuantity and ConsumedUnit must be null outside ChargeCategory "Usage".
        "ConsumedQuantity": line.device_hours if usage else None, "ConsumedUnit": "Device-Hours" if usage else None,
        # A credit is unrelated to a unit price: its List and Contracted cost equal its BilledCost.
        "ContractedUnitPrice": line.price if usage else None, "ListUnitPrice": line.price if usage else None,
        "PricingCategory": "Standard" if usage else None,
        "PricingQuantity": line.gpu_equivalent_hours if usage else None, "PricingUnit": "GPU-Hours" if usage else None,
        "InvoiceIssuer": provider.name, "Provider": provider.name, "Publisher": provider.name,
        "RegionId": None, "RegionName": None,
        "ResourceId": f"{provider.tag_prefix}/requests/{line.request_id}" if line.request_id else None,
        "ResourceName": line.request_name if line.request_id else None,
        "ResourceType": "GPU request" if line.request_id else None,
        "ServiceCategory": "Compute", "ServiceName": "GPU capacity",
        "SkuId": sku_id(line), "SkuPriceId": sku_price_id(line),
        "SubAccountId": line.team, "SubAccountName": line.team_name,
        "Tags": tags(line, provider),
        # 1.1
        "CapacityReservationId": None, "CapacityReservationStatus": None, "CommitmentDiscountQuantity": None,
        "CommitmentDiscountUnit": None, "ServiceSubcategory": "Containers", "SkuMeter": "GPU-equivalent time",
        "SkuPriceDetails": json.dumps({"GpuModel": line.gpu_model, "SharingStrategy": line.strategy},
                                      sort_keys=True, separators=(",", ":")),
        # 1.2
        "BillingAccountType": "Cost centre", "SubAccountType": "Team" if line.team else None, "InvoiceId": None,
        "PricingCurrency": line.currency,
        "PricingCurrencyContractedUnitPrice": line.price if usage else None,
        "PricingCurrencyListUnitPrice": line.price if usage else None,
        "PricingCurrencyEffectiveCost": line.cost,
        # the portal's dimensions
        "x_Team": line.team, "x_CostCenter": line.cost_center or None, "x_RequestId": line.request_id,
        "x_RequestName": line.request_name, "x_Cluster": line.cluster, "x_SharingStrategy": line.strategy,
        "x_GpuModel": line.gpu_model, "x_MigProfile": line.mig_profile or None, "x_Category": line.category,
        "x_DeviceHours": line.device_hours, "x_GpuEquivalentHours": line.gpu_equivalent_hours,
        "x_AllocationMismatch": "true" if line.allocation_mismatch else "false",
    }
    return {name: values[name] for name in columns(version)}

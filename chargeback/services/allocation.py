"""Ingestion's second step, per pod: what the cluster says it allocated (DRA claims) and whether a failed pod's
device was unhealthy. It runs on the rows ingestion has already attributed to a request (chargeback.services.
ingestion, from the pods' labels); it only replaces the share of a DRA pod with the devices its claims got, and
records hardware-fault credits once the intervals are written."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from intake.events import events_cluster_record

from ..allocation import (
    AllocatedShape, ClusterFacts, allocated_shape, claims_by_name, describe, pod_devices, slice_devices, uses_claims,
)
from ..choices import Flag

# Positions in an ingestion row (chargeback.services.ingestion._COLUMNS).
STRATEGY, GPU_MODEL, MIG_PROFILE, DEVICES, NUM, DEN, FLAGS = 6, 7, 8, 9, 10, 11, 13


@dataclass(frozen=True)
class Mismatch:
    request_id: int
    pod: str
    approved: str
    allocated: str


def _approved(row: Sequence) -> str:
    shape = f"{row[DEVICES]} x {row[MIG_PROFILE]}" if row[MIG_PROFILE] else f"{row[DEVICES]} GPU(s)"
    return f"{shape} of {row[GPU_MODEL]} ({float(Fraction(row[NUM], row[DEN])):.4g} GPU equivalents)"


def _differs(row: Sequence, shape: AllocatedShape) -> bool:
    return (row[GPU_MODEL], row[MIG_PROFILE] or "", int(row[DEVICES]), Fraction(row[NUM], row[DEN])) != (
        shape.gpu_model, shape.mig_profile, shape.devices, shape.equivalents)


def bill_as_allocated(rows: list[tuple], pods: Sequence[dict], *, facts: ClusterFacts | None, catalogue,
                      policy: str) -> tuple[list[tuple], list[Mismatch]]:
    """The rows of DRA pods with the devices their claims were allocated in place of what the labels say (the
    approval), flagged `allocation_mismatch` where the two differ. Rows of pods without claims, or whose claims
    are not allocated or whose devices the catalogue does not know, are left as they are."""
    if not facts or not facts.claims:
        return rows, []
    claims, devices = claims_by_name(facts.claims), slice_devices(facts.slices)
    by_uid = {(p.get("metadata") or {}).get("uid"): p for p in pods if uses_claims(p)}
    billed, mismatches = [], []
    for row in rows:
        pod = by_uid.get(row[0])
        found = pod_devices(pod, claims=claims, devices=devices) if pod is not None else None
        shape = allocated_shape(found, catalogue=catalogue, policy=policy) if found else None
        if shape is None:
            billed.append(row)
            continue
        row = list(row)
        if _differs(row, shape):
            row[FLAGS] = ",".join(dict.fromkeys([*filter(None, row[FLAGS].split(",")), Flag.ALLOCATION_MISMATCH]))
            if row[3]:
                mismatches.append(Mismatch(row[3], f"{row[1]}/{row[2]}", _approved(row), describe(shape)))
        strategy = row[STRATEGY]
        if shape.mig:
            strategy = "mig"
        elif strategy == "mig":
            strategy = "whole_gpu"
        row[STRATEGY], row[GPU_MODEL], row[MIG_PROFILE] = strategy, shape.gpu_model, shape.mig_profile[:40]
        row[DEVICES], row[NUM], row[DEN] = shape.devices, shape.equivalents.numerator, shape.equivalents.denominator
        billed.append(tuple(row))
    return billed, mismatches


def mismatches_record(mismatches: Sequence[Mismatch]) -> int:
    """One note on each request's history per distinct mismatch (seen again: nothing new)."""
    return events_cluster_record(items=[
        (m.request_id, f"allocation:{m.approved}->{m.allocated}"[:200], "AllocationMismatch",
         f"The cluster allocated {m.allocated} to {m.pod} where {m.approved} was approved; it is billed as "
         "allocated.") for m in mismatches])

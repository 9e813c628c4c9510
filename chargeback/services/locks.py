"""The advisory locks chargeback writes take, and the frozen horizon (where the closed months end).

Every write to a cluster's intervals runs under a per-cluster transaction-level advisory lock, so passes over the
same cluster from several workers serialise, and each one upserts against what the previous one committed. A
month close takes an exclusive lock that ingestion shares, so a pass never straddles a close.
"""
from __future__ import annotations

import zlib
from datetime import datetime

from django.db import connection

from ..models import ClosedPeriod
from ..periods import add_months, day_start

LOCK_CLASS = 0x6362  # "cb": the advisory-lock namespace of chargeback
CLOSE_LOCK = 1


def lock_cluster(cluster_name: str) -> None:
    """Hold back a month close (shared) and every other write to this cluster's intervals (exclusive)."""
    key = zlib.crc32(f"cluster:{cluster_name}".encode()) - 2**31  # signed int4
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [LOCK_CLASS, CLOSE_LOCK])
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, key])


def lock_close() -> None:
    """Wait for ingestion passes in flight and hold new ones back until the transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, CLOSE_LOCK])


def frozen_until() -> datetime | None:
    """Start of the first open month after the closed ones; everything before it is frozen (None: nothing)."""
    last = ClosedPeriod.objects.order_by("-month").values_list("month", flat=True).first()
    return None if last is None else day_start(add_months(last, 1))

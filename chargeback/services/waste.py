"""Waste and idle time: reclassifying a request's GPU time inside a window (a stalled gang's burnt time, idle
GPUs) by splitting its intervals there, and booking the stalls that are over."""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from portal.errors import InvalidInput
from provisioning.models import GangStall

from ..choices import Category, CollectionStatus, EndSource
from ..models import Adjustment, StallWaste, UsageCollection, UsageInterval
from .adjustments import adjustment_line, by_month, clip
from .locks import frozen_until, lock_cluster


@transaction.atomic
def usage_mark_waste(*, request_id: int, started_at: datetime, ended_at: datetime, reason: str = "stalled gang",
                     now: datetime | None = None, category: str = Category.WASTE) -> int:
    """Reclassify a request's GPU time inside [started_at, ended_at) as waste (e.g. the burnt time of a stalled
    gang), splitting its pods' intervals there; its own line in reports, category `waste`. Returns how many
    intervals were split. Time already in a closed month moves through adjustment lines. `category` IDLE books
    idle GPU time (paid for, unused) the same way."""
    now = now or timezone.now()
    if ended_at <= started_at:
        raise InvalidInput("The waste window must end after it starts.", field="ended_at")
    if ended_at > now:
        raise InvalidInput("The waste window cannot end in the future; mark it once it is over.", field="ended_at")
    clusters = sorted(set(UsageInterval.objects.filter(request_id=request_id).values_list("cluster", flat=True)))
    for cluster in clusters:
        lock_cluster(cluster)
    horizon = frozen_until()
    overlapping = list(
        UsageInterval.objects.select_for_update(no_key=True)
        .filter(request_id=request_id, category=Category.USAGE, started_at__lt=ended_at)
        .exclude(ended_at__isnull=False, ended_at__lte=started_at)
        .order_by("pod_uid", "started_at")
    )
    adjustments = []
    for interval in overlapping:
        a, b = interval.started_at, interval.ended_at
        mid = (max(a, started_at), ended_at if b is None else min(b, ended_at))
        before = (a, started_at) if a < started_at else None
        after = (ended_at, b) if b is None or b > ended_at else None
        original_end, original_source = b, interval.end_source
        # Shrink the existing row first, so the pieces never overlap it (the exclusion constraint checks).
        if before:
            interval.ended_at, interval.end_source = before[1], EndSource.SPLIT
        else:
            interval.category = category
            interval.ended_at = mid[1]
            interval.end_source = EndSource.SPLIT if after else original_source
        interval.save(update_fields=["ended_at", "end_source", "category", "updated_at"])
        pieces = []
        if before:
            pieces.append((mid, category, EndSource.SPLIT if after else original_source))
        if after:
            pieces.append(((after[0], original_end), Category.USAGE, original_source))
        for (start, end), piece_category, end_source in pieces:
            piece = UsageInterval.objects.get(pk=interval.pk)
            piece.pk = None
            piece.started_at, piece.ended_at, piece.category, piece.end_source = start, end, piece_category, end_source
            piece.save(force_insert=True)
        if horizon:
            frozen_mid = clip(mid[0], mid[1], horizon)
            if frozen_mid:
                for span in by_month(frozen_mid):
                    adjustments.append(adjustment_line(interval, span=span, sign=-1, category=Category.USAGE,
                                                   horizon=horizon, reason=f"reclassified as {category}: {reason}"))
                    adjustments.append(adjustment_line(interval, span=span, sign=+1, category=category,
                                                   horizon=horizon, reason=f"reclassified as {category}: {reason}"))
    Adjustment.objects.bulk_create(adjustments)
    return len(overlapping)


def waste_record_stalls(*, cluster_name: str, now: datetime | None = None) -> int:
    """Turn every stalled gang of the cluster that is over, and whose cluster was read after it ended, into
    `waste` lines (once each). Run after each collection pass. Returns how many stalls were recorded."""
    now = now or timezone.now()
    last_read = (UsageCollection.objects.filter(cluster=cluster_name, status=CollectionStatus.OK)
                 .order_by("-listed_at").values_list("listed_at", flat=True).first())
    if last_read is None:
        return 0
    stalls = (GangStall.objects.filter(cluster__name=cluster_name, ended_at__isnull=False, ended_at__lte=last_read,
                                       waste__isnull=True)
              .exclude(ended_at=F("started_at")).order_by("ended_at"))
    recorded = 0
    for stall in stalls:
        with transaction.atomic():
            split = usage_mark_waste(request_id=stall.request_id, started_at=stall.started_at,
                                     ended_at=stall.ended_at, reason=f"stalled gang #{stall.pk}", now=now)
            StallWaste.objects.create(stall=stall, intervals_split=split)
        recorded += 1
    return recorded


"""Idle GPUs, read side: a request's right-sizing suggestion from what its workload used (the last scan's
GpuUtilisation), priced with the rate cards in force today, and the re-request that pre-fills the questionnaire."""
from __future__ import annotations

import math
from datetime import date
from fractions import Fraction
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from intake.models import GpuRequest
from gpu.catalogue import load_catalogue

from ..models import RateCard, UsageInterval
from . import rules
from .models import GpuUtilisation


def _price_at(day: date):
    def price(gpu_model: str, strategy: str):
        card = (RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy, valid_from__lte=day)
                .order_by("-valid_from").first())
        return (card.price_per_equivalent_hour, card.currency) if card else None
    return price


def _holding(gpu_request: GpuRequest) -> rules.Holding | None:
    """What the request holds, from its latest metered interval (the exact equivalents it is charged for)."""
    held = list(UsageInterval.objects.filter(request=gpu_request, ended_at__isnull=True))
    if not held:
        held = list(UsageInterval.objects.filter(request=gpu_request).order_by("-ended_at")[:1])
    if not held:
        return None
    latest = held[0]
    equivalents = sum((i.equivalents for i in held), Fraction(0))
    devices = sum(i.devices for i in held)
    return rules.Holding(gpu_model=latest.gpu_model, strategy=latest.strategy, mig_profile=latest.mig_profile,
                         devices=devices, equivalents=equivalents)


def rightsizing_get(*, gpu_request: GpuRequest) -> dict:
    """The suggestion for a request the caller may already see: `available` False (with why) when the portal has
    no measurement or nothing smaller would do."""
    observed = GpuUtilisation.objects.filter(request=gpu_request).first()
    if observed is None:
        return {"available": False, "why": "No GPU metrics yet: its cluster has no prometheus_url, or no scan has "
                                           "read its pods."}
    measured = {
        "window_start": observed.window_start, "window_end": observed.window_end, "samples": observed.samples,
        "peak_utilisation_percent": observed.peak_utilisation_percent,
        "median_utilisation_percent": observed.median_utilisation_percent,
        "peak_memory_used_mib": observed.peak_memory_used_mib, "memory_total_mib": observed.memory_total_mib,
    }  # fmt: skip
    holding = _holding(gpu_request)
    price = _price_at(timezone.now().date())
    suggestion = None
    if holding is not None:
        suggestion = rules.rightsizing(
            holding=holding, peak_memory_mib=observed.peak_memory_used_mib,
            memory_total_mib=observed.memory_total_mib, median_percent=observed.median_utilisation_percent,
            catalogue=load_catalogue(), price_per_equivalent_hour=lambda strategy: price(holding.gpu_model, strategy),
            equivalents_policy=settings.CHARGEBACK_MIG_EQUIVALENTS,
        )  # fmt: skip
    if suggestion is None:
        return {"available": False, "observed": measured,
                "why": "Nothing smaller of the same GPU model would have held what it used."}
    memory_gb = math.ceil(observed.peak_memory_used_mib * rules.MEMORY_HEADROOM / 1024)
    prefill = {"from": gpu_request.pk, "gpu_memory_gb": memory_gb}
    return {
        "available": True, "text": suggestion.text, "mig_profile": suggestion.mig_profile,
        "gpu_equivalents": f"{float(suggestion.equivalents):.6f}".rstrip("0").rstrip("."),
        "monthly_saving": suggestion.monthly_saving, "currency": suggestion.currency, "observed": measured,
        "rerequest_url": f"{reverse('web:request-new')}?{urlencode(prefill)}",
    }  # fmt: skip

"""Rate cards: effective-dated prices, edited by the platform team and finance; cards of closed months are
frozen."""
from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.db import transaction

from gpu.catalogue import load_catalogue
from portal.errors import InvalidInput, PermissionDenied
from portal.roles import is_finance, is_platform

from ..models import RateCard
from .locks import frozen_until


def _require_rates_role(user) -> None:
    if not (is_platform(user) or is_finance(user)):
        raise PermissionDenied("Only the platform team and finance edit rate cards.")


def rate_card_check(*, gpu_model: str, strategy: str, valid_from: date, existing: RateCard | None = None) -> None:
    """Why a rate card cannot be saved like this (InvalidInput naming the field), or nothing."""
    catalogue = load_catalogue()
    model = catalogue.models.get(gpu_model)
    if model is None:
        raise InvalidInput(f"Unknown GPU model {gpu_model!r}; use a catalogue key such as H200-141GB.", field="gpu_model")
    if strategy == "mig" and model.mig is None:
        raise InvalidInput(f"{gpu_model} has no MIG; pick whole_gpu, time_slicing or mps.", field="strategy")
    horizon = frozen_until()
    if horizon is None:
        return
    first_open = horizon.date()
    if existing is not None and existing.pk and existing.valid_from < first_open:
        raise InvalidInput(
            f"This card priced the closed month {existing.valid_from:%Y-%m}; add a new card from {first_open} instead.",
            field="valid_from",
        )
    if valid_from < first_open:
        raise InvalidInput(
            f"{valid_from:%Y-%m} is closed and its rates are frozen; start the new rate on or after {first_open}.",
            field="valid_from",
        )


@transaction.atomic
def rate_card_create(*, user, gpu_model: str, strategy: str, price_per_equivalent_hour: Decimal, currency: str,
                     valid_from: date, note: str = "") -> RateCard:
    _require_rates_role(user)
    rate_card_check(gpu_model=gpu_model, strategy=strategy, valid_from=valid_from)
    if RateCard.objects.filter(gpu_model=gpu_model, strategy=strategy, valid_from=valid_from).exists():
        raise InvalidInput(f"A {gpu_model} {strategy} rate already starts on {valid_from}; edit that one.",
                           field="valid_from")
    card = RateCard(gpu_model=gpu_model, strategy=strategy, price_per_equivalent_hour=price_per_equivalent_hour,
                    currency=currency.upper(), valid_from=valid_from, note=note, created_by=user)
    card.full_clean()
    card.save()
    return card


@transaction.atomic
def rate_card_update(*, user, rate_card: RateCard, **changes) -> RateCard:
    _require_rates_role(user)
    before = RateCard.objects.select_for_update(no_key=True).get(pk=rate_card.pk)
    rate_card_check(gpu_model=changes.get("gpu_model", before.gpu_model),
                    strategy=changes.get("strategy", before.strategy),
                    valid_from=changes.get("valid_from", before.valid_from), existing=before)
    for name, value in changes.items():
        setattr(rate_card, name, value)
    rate_card.full_clean()
    rate_card.save()
    return rate_card


@transaction.atomic
def rate_card_delete(*, user, rate_card: RateCard) -> None:
    _require_rates_role(user)
    rate_card_check(gpu_model=rate_card.gpu_model, strategy=rate_card.strategy, valid_from=rate_card.valid_from,
                    existing=rate_card)
    rate_card.delete()


"""Writes for metering and chargeback, one module per job: ingestion, waste and idle time, rate cards, month
close, late data for closed months (adjustments), collection passes, and the locks they share.

Concurrency: every write to a cluster's intervals runs under a per-cluster advisory lock and a month close takes
an exclusive lock that ingestion shares (chargeback.services.locks).
"""
from .adjustments import frozen_delta
from .close import period_closable, period_close
from .collection import usage_collect
from .ingestion import BATCH_SIZE, IngestResult, usage_ingest
from .locks import CLOSE_LOCK, LOCK_CLASS, frozen_until
from .rate_cards import rate_card_check, rate_card_create, rate_card_delete, rate_card_update
from .waste import usage_mark_waste, waste_record_stalls

__all__ = [
    "BATCH_SIZE", "CLOSE_LOCK", "LOCK_CLASS", "IngestResult", "frozen_delta", "frozen_until", "period_closable",
    "period_close", "rate_card_check", "rate_card_create", "rate_card_delete", "rate_card_update", "usage_collect",
    "usage_ingest", "usage_mark_waste", "waste_record_stalls",
]

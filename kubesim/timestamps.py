"""RFC 3339 timestamps as the API server writes them (second precision, UTC, a trailing Z), for the simulated
controllers: one spelling for the kubelet, the scheduler's preemption, Kueue and the mig-manager."""
from __future__ import annotations

import datetime
import time

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def stamp(moment: float | None = None) -> str:
    """The timestamp of a POSIX moment (now when None)."""
    return datetime.datetime.fromtimestamp(time.time() if moment is None else moment, datetime.UTC).strftime(FORMAT)


def moment_of(stamp_text: str | None) -> float | None:
    """The POSIX moment of a timestamp; None for none."""
    if not stamp_text:
        return None
    return datetime.datetime.strptime(stamp_text, FORMAT).replace(tzinfo=datetime.UTC).timestamp()

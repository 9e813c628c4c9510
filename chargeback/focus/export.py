"""The FOCUS CSV: a header row of column IDs, then one row per line, written in batches from a server-side
cursor's rows (no queries here). No note lines: FOCUS readers take the first line as the header.

Formats as FOCUS asks (`specification/attributes/`, tag v1.0): decimals with "." and no exponent or thousands
separator (numeric_format.md), date/times as YYYY-MM-DDTHH:mm:ssZ (done in columns.py), empty cells for null
(null_handling.md), UTF-8. CRLF line ends, as the portal's other CSV.
"""
from __future__ import annotations

import csv
from datetime import date
from decimal import Decimal
from typing import Iterable, Iterator, Sequence

BATCH_ROWS = 500


def focus_filename(*, start: date, end: date, version: str) -> str:
    return f"gpu-chargeback-focus-{version}_{start:%Y-%m-%d}_{end:%Y-%m-%d}.csv"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


class _Line:
    def write(self, value: str) -> str:
        return value


def focus_csv_lines(rows: Iterable[dict], *, columns: Sequence[str], batch_rows: int = BATCH_ROWS) -> Iterator[str]:
    """The CSV text in chunks of `batch_rows` lines: the header, then one line per row dict."""
    writer = csv.writer(_Line(), lineterminator="\r\n")
    yield writer.writerow(columns)
    batch: list[str] = []
    for row in rows:
        batch.append(writer.writerow([_cell(row[name]) for name in columns]))
        if len(batch) >= batch_rows:
            yield "".join(batch)
            batch = []
    if batch:
        yield "".join(batch)

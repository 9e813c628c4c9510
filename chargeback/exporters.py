"""CSV formatting of report rows (Saleor-style: a header row, then rows written in batches). No queries here:
the caller hands over the rows (a server-side cursor's iterator), so memory stays flat.

Excel-, pandas- and csv.DictReader-friendly: comma-separated, CRLF line ends, the header row first (how the figures
are rounded is said in docs/chargeback.md and on the finance page, not in the file), ISO dates (YYYY-MM-DD, months
YYYY-MM), decimals with "." and no thousands separators or exponents, empty cells for "none" (an unpriced cost).
Every cell goes through `portal.spreadsheet.csv_cell`, which neutralises text a spreadsheet would run as a formula
(a pod's annotations reach these rows).
"""
from __future__ import annotations

import csv
from datetime import date
from typing import Iterable, Iterator, Sequence

from portal.spreadsheet import csv_cell

BATCH_ROWS = 500

# The rounding rule (docs/chargeback.md, "Rounding"), said where the figures are: the finance page.
ROUNDING_NOTES = (
    # No commas: a note stays in one cell when a spreadsheet opens the file.
    "Cost is rounded to the cent once per line of request x UTC day x strategy x GPU model x rate (half a cent "
    "away from zero) and every row is a sum of those lines: rows add up to totals and days to months.",
    "Hours are summed exactly: the page shows them to 2 decimals, the CSV and the API to 6.",
)


def csv_filename(*, start: date, end: date) -> str:
    return f"gpu-chargeback_{start:%Y-%m-%d}_{end:%Y-%m-%d}.csv"


class _Line:
    """A file-like object whose write() hands the formatted line back (csv.writer needs a file)."""

    def write(self, value: str) -> str:
        return value


def csv_lines(
    rows: Iterable[Sequence],
    *,
    columns: Sequence[str],
    shown: Sequence[str],
    start: date,
    end: date,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[str]:
    """The CSV text in chunks of `batch_rows` lines: the header row (period_start, period_end, then `shown`) first,
    then one line per row. `rows` are tuples in `columns` order; only the `shown` columns are written."""
    writer = csv.writer(_Line(), lineterminator="\r\n")
    positions = [columns.index(name) for name in shown]
    period = [start.isoformat(), end.isoformat()]
    yield writer.writerow(["period_start", "period_end", *shown])
    batch: list[str] = []
    for row in rows:
        batch.append(writer.writerow(period + [csv_cell(row[i]) for i in positions]))
        if len(batch) >= batch_rows:
            yield "".join(batch)
            batch = []
    if batch:
        yield "".join(batch)

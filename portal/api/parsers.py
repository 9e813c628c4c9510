"""JSON request bodies, parsed so that no body can make the server fail: every value that PostgreSQL, Python or a
later step cannot handle is refused here with a 400 naming the field, before any serializer or query sees it.

- Nesting is bounded (MAX_DEPTH) before `json` recurses: a ~100k-deep body would exhaust Python's stack.
- Numbers are finite and within PostgreSQL's bigint range: `1e400` parses to infinity, and a 400-digit integer
  cannot even be compared with a float.
- Text is valid Unicode without NUL: PostgreSQL refuses NUL in text and JSONB, and a lone surrogate (`"\\ud800"`)
  cannot be encoded as UTF-8 at all.
"""
from __future__ import annotations

import codecs
import json
import math
import re

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

# Deeper than any shape the API accepts (answers are flat; a manifest is a handful of levels), far below
# Python's recursion limit.
MAX_DEPTH = 32
# PostgreSQL's bigint: the widest integer any column or JSONB consumer of ours handles.
MAX_INTEGER = 2**63 - 1

NUL = "\x00"
MESSAGE = "Text may not contain the NUL character (\\u0000)."
SURROGATE_MESSAGE = "Text must be valid Unicode: a lone surrogate (\\ud800-\\udfff) is not a character."
DEPTH_MESSAGE = f"Nested too deeply: at most {MAX_DEPTH} levels of objects and arrays."
NUMBER_MESSAGE = f"Numbers must be finite and integers between -{MAX_INTEGER} and {MAX_INTEGER}."

# The tokens that matter for nesting: strings (whose brackets do not count) and the brackets themselves.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]', re.S)


class _BadNumber:
    """Stands in for a number outside the range while parsing, so the walk below can name its field."""


BAD_NUMBER = _BadNumber()


def _parse_int(text: str):
    # Length first: int() of a very long literal is itself refused by Python (ValueError), and slow.
    if len(text.lstrip("-")) > 19:
        return BAD_NUMBER
    value = int(text)
    return value if abs(value) <= MAX_INTEGER else BAD_NUMBER


def _parse_float(text: str):
    value = float(text)
    return value if math.isfinite(value) else BAD_NUMBER


def _reject_constant(text: str):
    raise ValueError(f"{text} is not a JSON number")


def depth_error(text: str, limit: int = MAX_DEPTH) -> dict | None:
    """The error dict if `text` nests deeper than `limit`, naming the top-level key it happened under; None
    otherwise (also for malformed text, which the JSON parser then reports)."""
    depth, top_key, last_string = 0, None, None
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return {top_key or "non_field_errors": [DEPTH_MESSAGE]}
        elif token in "]}":
            depth -= 1
        elif token == ":":
            if depth == 1 and last_string is not None:
                try:
                    top_key = json.loads(last_string)
                except ValueError:
                    top_key = None
        else:
            last_string = token
    return None


def _text_error(text: str) -> str | None:
    if NUL in text:
        return MESSAGE
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE_MESSAGE
    return None


def body_error(value, path: tuple = ()) -> dict | None:
    """The nested error dict for the first value in `value` (keys included) that may not be stored, or None.
    Items of a list are reported under the list's own field."""
    message = None
    if isinstance(value, str):
        message = _text_error(value)
    elif value is BAD_NUMBER:
        message = NUMBER_MESSAGE
    elif isinstance(value, dict):
        for key, item in value.items():
            key_message = _text_error(str(key))
            if key_message:
                return _nest(path + ("non_field_errors",), [key_message])
            found = body_error(item, path + (str(key),))
            if found:
                return found
    elif isinstance(value, list):
        for item in value:
            found = body_error(item, path)
            if found:
                return found
    if message is None:
        return None
    return _nest(path, [message]) if path else {"non_field_errors": [message]}


def _nest(path: tuple, messages: list[str]) -> dict:
    body: dict | list = messages
    for key in reversed(path):
        body = {key: body}
    return body


def loads(text: str):
    """Parse JSON text the way the API does; raises ValidationError (a 400 naming the field) or ParseError."""
    error = depth_error(text)
    if error:
        raise ValidationError(error)
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"JSON parse error - {exc}") from None
    error = body_error(data)
    if error:
        raise ValidationError(error)
    return data


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        return loads(text)

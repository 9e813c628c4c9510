"""JSON request bodies, with one guard every endpoint needs: PostgreSQL cannot store the NUL character, in
text or JSONB, so a body carrying one anywhere is refused here with the field named, before any query fails."""
from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.parsers import JSONParser

NUL = "\x00"
MESSAGE = "Text may not contain the NUL character (\\u0000)."


def nul_error(value, path: tuple = ()) -> dict | None:
    """The nested error dict for the first NUL found in `value` (keys included), or None."""
    if isinstance(value, str):
        if NUL not in value:
            return None
        return _nest(path, [MESSAGE]) if path else {"non_field_errors": [MESSAGE]}
    if isinstance(value, dict):
        for key, item in value.items():
            if NUL in str(key):
                return _nest(path + ("non_field_errors",), [MESSAGE])
            found = nul_error(item, path + (str(key),))
            if found:
                return found
    if isinstance(value, list):
        for item in value:
            found = nul_error(item, path)
            if found:
                return found
    return None


def _nest(path: tuple, messages: list[str]) -> dict:
    body: dict | list = messages
    for key in reversed(path):
        body = {key: body}
    return body


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if isinstance(data, str) and NUL in data:
            raise ValidationError({"non_field_errors": [MESSAGE]})
        error = nul_error(data)
        if error:
            raise ValidationError(error)
        return data

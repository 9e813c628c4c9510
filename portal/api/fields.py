"""Serializer fields shared by every app's API."""

from rest_framework import serializers


class CharField(serializers.CharField):
    """A text field that refuses numbers and booleans instead of turning them into text.

    DRF's CharField accepts `{"name": -368}` and stores "-368"; the OpenAPI schema says `type: string`, so a client
    sending a number has a bug it should hear about (found by the API fuzzer, tests/test_fuzz_api.py).
    """

    default_error_messages = {"not_text": "Must be text, not {kind}."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_text", kind=type(data).__name__)
        return super().to_internal_value(data)

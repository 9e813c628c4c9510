"""Template helpers of the register page."""
from __future__ import annotations

import json

from django import template
from django.core.serializers.json import DjangoJSONEncoder

register = template.Library()


@register.filter
def pretty_json(value) -> str:
    """Evidence as indented JSON (auto-escaped by the template)."""
    return json.dumps(value, cls=DjangoJSONEncoder, indent=2, sort_keys=False)

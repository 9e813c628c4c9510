"""The API's router: DRF's SimpleRouter with ids in the path made of ASCII digits only.

DRF's default lookup pattern is `[^/.]+`, and `\\d` in a pattern matches every Unicode digit; either way "٣"
(ARABIC-INDIC DIGIT THREE) reaches the view, and Django's integer field turns it into 3, so
`/api/v1/requests/%D9%A3/approve/` approved request 3. Here a viewset's lookup is `[0-9]+` unless it names its
own pattern, and a pattern with `\\d` is refused when the URLs are built.
"""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from rest_framework.routers import SimpleRouter

ID_PATTERN = "[0-9]+"


class PortalRouter(SimpleRouter):
    def get_lookup_regex(self, viewset, lookup_prefix=""):
        pattern = getattr(viewset, "lookup_value_regex", None)
        if pattern is not None and "\\d" in pattern:
            raise ImproperlyConfigured(f"{viewset.__name__}.lookup_value_regex {pattern!r}: \\d matches every "
                                       "Unicode digit; write [0-9]")
        lookup_field = getattr(viewset, "lookup_field", "pk")
        lookup_url_kwarg = getattr(viewset, "lookup_url_kwarg", None) or lookup_field
        return f"(?P<{lookup_prefix}{lookup_url_kwarg}>{pattern or ID_PATTERN})"

"""Content negotiation that treats `?format=` given empty as a mistake (404, as for an unknown format) rather than as
"no format": the schema lists the formats an operation serves, and an empty value is none of them."""
from django.http import Http404
from rest_framework.negotiation import DefaultContentNegotiation


class StrictFormatNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request, renderers, format_suffix=None):
        if format_suffix is None and request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) == "":
            raise Http404("Give a format (for example json) or leave the format parameter out.")
        return super().select_renderer(request, renderers, format_suffix)

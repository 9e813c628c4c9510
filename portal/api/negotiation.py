from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation


class StrictContentNegotiation(DefaultContentNegotiation):
    """`?format=` given but empty is a mistake; say so instead of quietly answering in the default format."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) == "":
            raise ValidationError({"format": ["Give a format (for example json or yaml) or leave it out."]})
        return super().select_renderer(request, renderers, format_suffix)

import yaml
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework.renderers import BaseRenderer


class MultiDocumentYAMLRenderer(BaseRenderer):
    """A list as multi-document YAML (`?format=yaml`), one document per item: Kubernetes objects ready for
    `kubectl apply -f -`, or Backstage catalog entities."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        documents = data if isinstance(data, list) else [data]
        if not documents:
            # A YAML stream with no documents; an empty body would lose its content type on the way out.
            return b"# no documents\n"
        return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False,
                                  allow_unicode=True).encode(self.charset)


# How a `?format=yaml` answer is documented: a YAML stream is not one JSON value, so its schema is left open.
YAML_STREAM_RESPONSE = OpenApiResponse(
    response=OpenApiTypes.ANY, description="multi-document YAML stream (one document per item)"
)

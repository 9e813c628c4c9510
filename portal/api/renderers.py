import yaml
from rest_framework.renderers import BaseRenderer


class MultiDocumentYAMLRenderer(BaseRenderer):
    """A list of Kubernetes objects as multi-document YAML (`?format=yaml`), ready for `kubectl apply -f -`."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        documents = data if isinstance(data, list) else [data]
        return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False).encode(self.charset)

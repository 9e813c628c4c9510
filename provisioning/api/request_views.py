"""The request API's provisioning actions, served by provisioning at the request's own URLs
(/api/v1/requests/{id}/manifests/, /fit/, /wait/): intake's request API is the layer below and never imports
provisioning. Visibility is intake's (intake.selectors.request_get): another team's request is a 404."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from intake import selectors as intake_selectors
from intake.models import GpuRequest
from portal.api.renderers import YAML_STREAM_RESPONSE, MultiDocumentYAMLRenderer

from .. import selectors
from ..selectors import request_wait
from .serializers import FitSerializer, WaitSerializer

# The request's Kubernetes objects: a JSON array of objects (their shapes are Kubernetes', not ours).
KUBERNETES_OBJECTS = OpenApiResponse(
    response={"type": "array", "items": {"type": "object", "additionalProperties": True}},
    description="the Kubernetes objects, in the order they are applied",
)


# No class docstring: drf-spectacular would make it every operation's description.
class RequestProvisioningViewSet(viewsets.GenericViewSet):
    queryset = GpuRequest.objects.none()  # for the schema's {id}; every action applies visibility

    def get_object(self):
        return intake_selectors.request_get(user=self.request.user, request_id=self.kwargs["pk"])

    @extend_schema(
        responses={(200, "application/json"): KUBERNETES_OBJECTS,
                   (200, "application/yaml"): YAML_STREAM_RESPONSE},
        parameters=[OpenApiParameter("format", str, enum=["json", "yaml"], description="yaml: multi-document")],
        summary="The Kubernetes objects of this request, in the order they are applied",
    )
    @action(detail=True, methods=["get"], renderer_classes=[JSONRenderer, MultiDocumentYAMLRenderer])
    def manifests(self, request, pk=None):
        return Response(selectors.request_manifests(gpu_request=self.get_object()))

    @extend_schema(responses={200: FitSerializer},
                   summary="Does the request fit its pool node by node: fits_now, fits_after or never, with the "
                           "projected GPU-hours and the team's quota")
    @action(detail=True, methods=["get"])
    def fit(self, request, pk=None):
        fit = selectors.request_fit(gpu_request=self.get_object(), user=request.user)
        return Response(FitSerializer(fit).data)

    @extend_schema(responses={200: WaitSerializer},
                   summary="Why a request is not (fully) running: waiting for approval (its place in the queue, "
                           "whether it fits, whether quota is held), or the schedulers' reasons, what would unblock "
                           "it, its queue position and an estimated start with its basis")
    @action(detail=True, methods=["get"])
    def wait(self, request, pk=None):
        gpu_request = intake_selectors.request_get_brief(user=request.user, request_id=pk)
        return Response(WaitSerializer(request_wait(gpu_request=gpu_request)).data)

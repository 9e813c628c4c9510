"""The request API's right-sizing action, served by chargeback at the request's own URL
(/api/v1/requests/{id}/rightsizing/): intake's request API is the layer below and never imports chargeback.
Visibility is intake's (intake.selectors.request_get): another team's request is a 404."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from intake import selectors as intake_selectors
from intake.models import GpuRequest

from ..idle.selectors import rightsizing_get
from .serializers import RightsizingSerializer


# No class docstring: drf-spectacular would make it the operation's description.
class RequestRightsizingViewSet(viewsets.GenericViewSet):
    queryset = GpuRequest.objects.none()  # for the schema's {id}; the action applies visibility

    @extend_schema(responses={200: RightsizingSerializer},
                   summary="Right-sizing from what its GPUs did (Prometheus): the smaller MIG slice that would serve "
                           "it, the monthly saving, and a pre-filled re-request")
    @action(detail=True, methods=["get"])
    def rightsizing(self, request, pk=None):
        gpu_request = intake_selectors.request_get(user=request.user, request_id=pk)
        return Response(RightsizingSerializer(rightsizing_get(gpu_request=gpu_request)).data)

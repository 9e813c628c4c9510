"""`GET /api/v1/register/`: the platform decision register as JSON, or Markdown with `?format=md`."""
from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.negotiation import StrictContentNegotiation
from provisioning.api.views import IsPlatform

from .. import selectors
from ..export import register_markdown
from .serializers import RegisterQueryInputSerializer, RegisterSerializer


class MarkdownRenderer(BaseRenderer):
    media_type = "text/markdown"
    format = "md"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data.encode(self.charset) if isinstance(data, str) else b""


class KnownFormatNegotiation(StrictContentNegotiation):
    """An unknown `?format=` is bad input (400 naming it), not a missing page."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            formats = ", ".join(r.format for r in renderers)
            raise ValidationError({"format": [f"One of {formats}."]}) from None


class RegisterView(APIView):
    renderer_classes = [JSONRenderer, MarkdownRenderer]
    content_negotiation_class = KnownFormatNegotiation
    permission_classes = [IsAuthenticated, IsPlatform]

    @extend_schema(
        parameters=[RegisterQueryInputSerializer],
        responses={(200, "application/json"): RegisterSerializer,
                   (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description="the register in Markdown")},
        summary="The platform decision register: every decision area, decided / inherited / conflict, with the "
                "evidence (platform team)",
    )
    def get(self, request):
        params = RegisterQueryInputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        register = selectors.register_for(user=request.user, days=params.validated_data["days"])
        if request.accepted_renderer.format == MarkdownRenderer.format:
            return Response(register_markdown(register))
        return Response(RegisterSerializer(register).data)

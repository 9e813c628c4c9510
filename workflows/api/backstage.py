"""`GET /api/v1/backstage/entities/`: the caller's visible GPU requests as Backstage catalog entities (JSON list,
or multi-document YAML with `?format=yaml`)."""
from __future__ import annotations

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers

from portal.api.fields import CharField
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.renderers import YAML_STREAM_RESPONSE, MultiDocumentYAMLRenderer

from intake import selectors
from intake.backstage import request_entity
from intake.choices import RequestStatus


class BackstageEntitySerializer(serializers.Serializer):
    apiVersion = CharField(help_text="backstage.io/v1alpha1")
    kind = CharField(help_text="Resource")
    metadata = serializers.DictField(help_text="name, namespace, title, description, labels, annotations, tags, links")
    spec = serializers.DictField(help_text="type gpu-allocation, owner group:<namespace>/<team>")


def _portal_url(request, path: str) -> str:
    base = getattr(settings, "PORTAL_BASE_URL", "")
    return base.rstrip("/") + path if base else request.build_absolute_uri(path)


class BackstageEntitiesView(APIView):
    renderer_classes = [JSONRenderer, MultiDocumentYAMLRenderer]

    @extend_schema(
        summary="Your visible GPU requests as Backstage catalog entities (kind Resource, owned by the team)",
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, many=True, enum=RequestStatus.values,
                             description="default: every live (non-terminal) status"),
            OpenApiParameter("team", OpenApiTypes.STR, description="team slug"),
            OpenApiParameter("format", OpenApiTypes.STR, enum=["json", "yaml"],
                             description="yaml: one YAML document per entity"),
        ],
        responses={(200, "application/json"): BackstageEntitySerializer(many=True),
                   (200, "application/yaml"): YAML_STREAM_RESPONSE},
    )
    def get(self, request):
        entities = [
            request_entity(
                request_id=gpu_request.pk,
                team=gpu_request.team.slug,
                name=gpu_request.name,
                status=gpu_request.status,
                strategy=gpu_request.strategy,
                workload_class=gpu_request.workload_class,
                decision=gpu_request.decision,
                policy_version=gpu_request.policy_version.number,
                rule_key=gpu_request.rule_key,
                requested_by=gpu_request.requested_by.get_username(),
                url=_portal_url(request, reverse("web:request-detail", args=[gpu_request.pk])),
                namespace=settings.BACKSTAGE_NAMESPACE,
                group_namespace=settings.BACKSTAGE_GROUP_NAMESPACE,
                system=settings.BACKSTAGE_SYSTEM,
            )
            for gpu_request in selectors.request_catalog_list(user=request.user, filters=request.query_params)
        ]
        return Response(entities)

"""Thin API views: validate the HTTP shape, call one service or selector, serialize. A request's provisioning and
right-sizing actions (/manifests/, /fit/, /wait/, /rightsizing/) are served at its URLs by the apps above
(provisioning.api.request_views, chargeback.api.request_views)."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.prototypes import represent, validate

from intake import policy_review, selectors
from intake.filtersets import RequestFilterSet
from intake.models import GpuRequest
from intake.questionnaire import questionnaire_definition
from intake.services import policy_version_sign_off

from .. import leases, services
from .serializers import (
    CommentInputSerializer,
    LeaseExtendInputSerializer,
    PolicyDiffQuerySerializer,
    PolicyDiffSerializer,
    PolicySignOffInputSerializer,
    PolicyVersionSerializer,
    PreviewInputSerializer,
    PreviewSerializer,
    RequestCreateInputSerializer,
    RequestListQuerySerializer,
    RequestListSerializer,
    RequestSerializer,
)


class QuestionnaireView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="The questionnaire: questions and JSON Schema")
    def get(self, request):
        return Response(questionnaire_definition())


class PreviewView(APIView):
    @extend_schema(request=PreviewInputSerializer, responses={200: PreviewSerializer},
                   summary="What you would get for these answers, and the Kubernetes objects; stores nothing")
    def post(self, request):
        data = PreviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        preview = services.request_preview(
            user=request.user,
            team=data.validated_data["team"],
            raw_answers=data.validated_data["answers"],
            name=data.validated_data.get("name") or "preview",
        )
        return Response(PreviewSerializer({"decision": preview.decision, "manifests": preview.manifests}).data)


@extend_schema_view(
    list=extend_schema(summary="Your teams' GPU requests (every team's for platform and finance), filtered and "
                               "paged, as a list shows them; ?expand=decision adds each decision",
                       parameters=[RequestListQuerySerializer]),
    retrieve=extend_schema(summary="One request: decision, answers, events, provisioning jobs, applied objects, stall"),
)
class RequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = RequestSerializer
    filterset_class = RequestFilterSet
    queryset = GpuRequest.objects.none()  # for the schema; get_queryset applies visibility

    def _expand_decision(self) -> bool:
        if "expand" not in self.__dict__:  # once a request: the queryset and the serializer both ask
            self.expand = validate(RequestListQuerySerializer, self.request.query_params).get("expand")
        return self.expand == "decision"

    def get_serializer_class(self):
        return RequestListSerializer if self.action == "list" else RequestSerializer

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.action == "list" and self.request is not None:
            context["expand_decision"] = self._expand_decision()
        return context

    def get_queryset(self):
        if self.action == "list":
            return selectors.request_list_rows(user=self.request.user, with_decision=self._expand_decision())
        return selectors.request_list(user=self.request.user)

    def get_object(self):
        return selectors.request_get(user=self.request.user, request_id=self.kwargs["pk"])

    def list(self, request):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(
            represent(RequestListSerializer, page, many=True, expand_decision=self._expand_decision()))

    def retrieve(self, request, pk=None):
        return Response(represent(RequestSerializer, self.get_object()))

    @extend_schema(request=RequestCreateInputSerializer, responses={201: RequestSerializer},
                   summary="Submit a GPU request for a team: it is decided at once and waits for approval")
    def create(self, request):
        data = validate(RequestCreateInputSerializer, request.data)
        gpu_request = services.request_submit(user=request.user, team=data["team"], name=data["name"],
                                              raw_answers=data["answers"])
        return Response(represent(RequestSerializer, selectors.request_loaded(gpu_request=gpu_request)),
                        status=status.HTTP_201_CREATED)

    def _transition(self, request, pk, service, **kwargs):
        data = CommentInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        gpu_request = service(user=request.user, request_id=pk, comment=data.validated_data["comment"],
                              expected_status=data.validated_data.get("expected_status"), **kwargs)
        fresh = selectors.request_get(user=request.user, request_id=gpu_request.pk)
        return Response(represent(RequestSerializer, fresh))

    @extend_schema(request=CommentInputSerializer, responses={200: RequestSerializer},
                   summary="Approve a pending request (platform team, not the requester); 409 if it moved on")
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        return self._transition(request, pk, services.request_approve)

    @extend_schema(request=CommentInputSerializer, responses={200: RequestSerializer},
                   summary="Reject a pending request with a comment (platform team); 409 if it moved on")
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        return self._transition(request, pk, services.request_reject)

    @extend_schema(request=LeaseExtendInputSerializer, responses={200: RequestSerializer},
                   summary="Extend the lease of your own grant; the time left may not pass the policy's maximum")
    @action(detail=True, methods=["post"], url_path="extend-lease")
    def extend_lease(self, request, pk=None):
        data = LeaseExtendInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        leases.lease_extend(user=request.user, request_id=pk, hours=data.validated_data["hours"])
        return Response(represent(RequestSerializer, selectors.request_get(user=request.user, request_id=pk)))

    @extend_schema(request=CommentInputSerializer, responses={200: RequestSerializer},
                   summary="Cancel a request that is not finished; what it applied is taken down")
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        return self._transition(request, pk, services.request_cancel)


@extend_schema_view(
    list=extend_schema(summary="Every version of the routing policy with its rules and review (drafts: platform team)"),
    retrieve=extend_schema(summary="One version of the routing policy with its rules and review"),
)
class PolicyVersionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Every version of the routing policy; drafts only for the platform team."""

    serializer_class = PolicyVersionSerializer
    lookup_field = "number"

    def get_queryset(self):
        return selectors.policy_version_list(user=self.request.user)

    @extend_schema(parameters=[PolicyDiffQuerySerializer], responses={200: PolicyDiffSerializer},
                   summary="What this version would change for the requests of the last N days")
    @action(detail=True, methods=["get"])
    def diff(self, request, number=None):
        query = PolicyDiffQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        diff = policy_review.policy_version_review(user=request.user, version=self.get_object(),
                                                   days=query.validated_data["days"])
        return Response(PolicyDiffSerializer(diff.as_dict()).data)

    @extend_schema(request=PolicySignOffInputSerializer, responses={200: PolicyVersionSerializer},
                   summary="Sign off a reviewed draft: it becomes the policy in force")
    @action(detail=True, methods=["post"], url_path="sign-off")
    def sign_off(self, request, number=None):
        data = PolicySignOffInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        version = policy_version_sign_off(
            user=request.user, version_id=self.get_object().pk, reviewed_digest=data.validated_data["digest"],
            days=data.validated_data["days"],
        )
        return Response(PolicyVersionSerializer(selectors.policy_version_list(user=request.user).get(pk=version.pk)).data)


class PolicyView(APIView):
    @extend_schema(responses={200: PolicyVersionSerializer}, summary="The routing policy in force, with its rules")
    def get(self, request):
        return Response(PolicyVersionSerializer(selectors.policy_current()).data)


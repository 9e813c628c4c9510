"""Operations endpoints of the portal itself (the platform team's)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors, services
from ..errors import NotFound, PermissionDenied
from ..roles import is_platform
from .serializers import (
    ApiTokenCreateInputSerializer,
    ApiTokenIssuedSerializer,
    ApiTokenSerializer,
    MeSerializer,
    TeamWebhookInputSerializer,
    TeamWebhookSerializer,
)

HeartbeatSerializer = inline_serializer(
    "WorkerHeartbeat",
    {
        "worker": serializers.CharField(help_text="Celery hostname of the worker that ran the ping"),
        "at": serializers.DateTimeField(),
        "age_seconds": serializers.FloatField(),
        "task_id": serializers.CharField(),
        "request_id": serializers.CharField(help_text="request id of the HTTP request (or beat run) that sent it"),
    },
)
PingSentSerializer = inline_serializer(
    "WorkerPingSent", {"task": serializers.CharField(), "request_id": serializers.CharField()}
)


class WorkerPingView(APIView):
    @extend_schema(responses={200: HeartbeatSerializer}, summary="The last heartbeat a Celery worker recorded")
    def get(self, request):
        if not is_platform(request.user):
            raise PermissionDenied("Only the platform team reads worker heartbeats.")
        heartbeat = selectors.worker_heartbeat()
        if heartbeat is None:
            raise NotFound("No worker has recorded a heartbeat yet: is a worker (and beat) running?")
        return Response(heartbeat)

    @extend_schema(request=None, responses={202: PingSentSerializer},
                   summary="Send a ping task; its heartbeat and logs carry this request's id")
    def post(self, request):
        services.worker_ping_dispatch(user=request.user)
        return Response({"task": "portal.ping", "request_id": request.request_id}, status=status.HTTP_202_ACCEPTED)


class MeView(APIView):
    """Who the caller is: username, role and teams. Scripts check their token with it."""

    @extend_schema(responses={200: MeSerializer}, summary="The authenticated user, role and teams")
    def get(self, request):
        return Response(MeSerializer(request.user).data)


class TeamWebhookView(APIView):
    """A team's webhook: its URL and the secret that signs every body (docs/clusters-and-credentials.md)."""

    @extend_schema(responses={200: TeamWebhookSerializer}, summary="The team's webhook URL and signing secret")
    def get(self, request, slug):
        return Response(TeamWebhookSerializer(selectors.team_webhook_get(user=request.user, slug=slug)).data)

    @extend_schema(request=TeamWebhookInputSerializer, responses={200: TeamWebhookSerializer},
                   summary="Set the team's webhook URL (its engineers, the platform team); \"\" removes it")
    def put(self, request, slug):
        data = TeamWebhookInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        team = services.team_webhook_set(user=request.user, team=selectors.team_webhook_get(user=request.user,
                                                                                             slug=slug),
                                         url=data.validated_data["webhook_url"])
        return Response(TeamWebhookSerializer(team).data)


class TeamWebhookSecretRotateView(APIView):
    @extend_schema(request=None, responses={200: TeamWebhookSerializer},
                   summary="Replace the team's webhook signing secret")
    def post(self, request, slug):
        team = services.team_webhook_secret_rotate(
            user=request.user, team=selectors.team_webhook_get(user=request.user, slug=slug))
        return Response(TeamWebhookSerializer(team).data)


@extend_schema_view(
    list=extend_schema(summary="Your API tokens, newest first (revoked ones too; never their secrets)"),
    retrieve=extend_schema(summary="One of your API tokens"),
    destroy=extend_schema(summary="Revoke one of your API tokens (it stops working at once)"),
)
class ApiTokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The caller's own API tokens. The platform team manages everyone's in the admin."""

    serializer_class = ApiTokenSerializer
    filter_backends = []

    def get_queryset(self):
        return selectors.token_list(user=self.request.user)

    @extend_schema(request=ApiTokenCreateInputSerializer, responses={201: ApiTokenIssuedSerializer},
                   summary="Issue a token; the response carries its secret, shown only this once")
    def create(self, request):
        params = ApiTokenCreateInputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        token, token.secret = services.token_issue(user=request.user, **params.validated_data)
        return Response(ApiTokenIssuedSerializer(token).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, pk=None):
        services.token_revoke(actor=request.user, token_id=self.get_object().pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

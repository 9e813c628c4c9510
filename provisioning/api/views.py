from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from portal.errors import PermissionDenied
from portal.roles import is_platform

from .. import selectors
from ..cluster_services import cluster_update
from ..credentials import cluster_credentials_put
from ..filtersets import ClusterFilterSet
from ..inventory_sync import inventory_sync_request
from ..models import Cluster
from .serializers import (
    ClusterCredentialInputSerializer,
    ClusterCredentialSerializer,
    ClusterDetailSerializer,
    ClusterUpdateInputSerializer,
    ClusterSerializer,
    SyncQueuedSerializer,
    UpgradeImpactInputSerializer,
    UpgradeImpactSerializer,
)


class IsPlatform(permissions.BasePermission):
    """Platform-team operations."""

    message = "Only the platform team may do this."

    def has_permission(self, request, view):
        return is_platform(request.user)


@extend_schema_view(
    list=extend_schema(summary="Clusters with their node pools, capacity by strategy, discrepancies and last sync"),
    retrieve=extend_schema(summary="One cluster with its pools, capacity, discrepancies and GPU nodes"),
)
class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Clusters and their node pools; readable by every signed-in user (engineers see where work can go).
    The detail adds the GPU nodes as last discovered."""

    serializer_class = ClusterSerializer
    filterset_class = ClusterFilterSet
    queryset = Cluster.objects.none()  # for the schema; get_queryset prefetches

    def get_queryset(self):
        return selectors.cluster_detail_list()

    def get_serializer_class(self):
        return ClusterDetailSerializer if self.action == "retrieve" else ClusterSerializer

    @extend_schema(request=ClusterUpdateInputSerializer, responses={200: ClusterDetailSerializer},
                   summary="Change a cluster's API server, description or enabled flag (platform team); a new API "
                           "server clears the credentials given for the old one")
    def partial_update(self, request, pk=None):
        if not is_platform(request.user):
            raise PermissionDenied("Only the platform team changes clusters.")
        data = ClusterUpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cluster, _ = cluster_update(user=request.user, cluster=self.get_object(), **data.validated_data)
        return Response(ClusterDetailSerializer(self.get_queryset().get(pk=cluster.pk),
                                                context=self.get_serializer_context()).data)

    @extend_schema(request=ClusterCredentialInputSerializer, responses={200: ClusterCredentialSerializer},
                   summary="Set how the portal authenticates to the cluster, for its current API server "
                           "(platform team); the token is stored encrypted and never answered back")
    @action(detail=True, methods=["put"], permission_classes=[permissions.IsAuthenticated, IsPlatform])
    def credentials(self, request, pk=None):
        data = ClusterCredentialInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        credential = cluster_credentials_put(user=request.user, cluster=self.get_object(), **data.validated_data)
        return Response(ClusterCredentialSerializer(credential).data)


    @extend_schema(request=None, responses={202: SyncQueuedSerializer},
                   summary="Discover the cluster's inventory now (platform team); runs in the background")
    @action(detail=True, methods=["post"], permission_classes=[permissions.IsAuthenticated, IsPlatform])
    def sync(self, request, pk=None):
        cluster = self.get_object()
        message = inventory_sync_request(user=request.user, cluster=cluster)
        return Response(SyncQueuedSerializer({"cluster": cluster.name, "status": "queued", "message": message}).data,
                        status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[
            OpenApiParameter("pool_id", OpenApiTypes.INT, OpenApiParameter.PATH),
            OpenApiParameter("driver_version", OpenApiTypes.STR, required=True,
                             description="the driver the pool would move to, e.g. 580.65.06"),
        ],
        responses={200: UpgradeImpactSerializer},
        summary="Requests that would no longer be schedulable if the pool moved to this driver (platform team)",
    )
    @action(detail=True, methods=["get"], url_path=r"pools/(?P<pool_id>[^/.]+)/upgrade-impact",
            permission_classes=[permissions.IsAuthenticated, IsPlatform], filter_backends=[], pagination_class=None)
    def upgrade_impact(self, request, pk=None, pool_id=None):
        data = UpgradeImpactInputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        pool = selectors.pool_get(cluster_id=pk, pool_id=pool_id)
        impact = selectors.driver_upgrade_impact(pool=pool, driver_version=data.validated_data["driver_version"])
        return Response(UpgradeImpactSerializer(impact).data)

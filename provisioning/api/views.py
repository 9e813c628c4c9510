from rest_framework import mixins, viewsets

from .. import selectors
from ..filtersets import ClusterFilterSet
from ..models import Cluster
from .serializers import ClusterSerializer


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Clusters and their node pools; readable by every signed-in user (engineers see where work can go)."""

    serializer_class = ClusterSerializer
    filterset_class = ClusterFilterSet
    queryset = Cluster.objects.none()  # for the schema; get_queryset prefetches
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        return selectors.cluster_list()

from rest_framework import mixins, viewsets

from .. import selectors
from .serializers import ClusterSerializer


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Clusters and their node pools; readable by every signed-in user (engineers see where work can go)."""

    serializer_class = ClusterSerializer
    filterset_fields = ["name", "scheduling_model", "gang_scheduler"]

    def get_queryset(self):
        return selectors.cluster_list()

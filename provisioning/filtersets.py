from portal.api.filters import StrictFilterSet

from .models import Cluster


class ClusterFilterSet(StrictFilterSet):
    class Meta:
        model = Cluster
        fields = ["name", "scheduling_model", "gang_scheduler"]

import django_filters

from portal.api.filters import StrictFilterSet

from .choices import RequestStatus, WorkloadClass
from .models import GpuRequest


class RequestFilterSet(StrictFilterSet):
    status = django_filters.MultipleChoiceFilter(choices=RequestStatus.choices)
    team = django_filters.CharFilter(field_name="team__slug")
    workload_class = django_filters.ChoiceFilter(choices=WorkloadClass.choices)
    strategy = django_filters.CharFilter()

    class Meta:
        model = GpuRequest
        fields = ["status", "team", "workload_class", "strategy"]

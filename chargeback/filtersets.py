import django_filters

from portal.api.filters import StrictFilterSet
from provisioning.choices import Strategy

from .choices import Category, EndSource, Flag
from .models import RateCard, UsageInterval


class UsageIntervalFilterSet(StrictFilterSet):
    team = django_filters.CharFilter(field_name="team__slug")
    cluster = django_filters.CharFilter()
    strategy = django_filters.ChoiceFilter(choices=Strategy.choices)
    gpu_model = django_filters.CharFilter()
    request = django_filters.NumberFilter(field_name="request_id")
    pod_uid = django_filters.CharFilter()
    category = django_filters.ChoiceFilter(choices=Category.choices)
    end_source = django_filters.ChoiceFilter(choices=[c for c in EndSource.choices if c[0]])
    open = django_filters.BooleanFilter(field_name="ended_at", lookup_expr="isnull", label="still open")
    flag = django_filters.ChoiceFilter(choices=Flag.choices, method="filter_flag")
    started_before = django_filters.IsoDateTimeFilter(field_name="started_at", lookup_expr="lt")
    active_after = django_filters.IsoDateTimeFilter(method="filter_active_after", label="open or ended after")
    is_demo = django_filters.BooleanFilter()

    class Meta:
        model = UsageInterval
        fields = ["team", "cluster", "strategy", "gpu_model", "request", "pod_uid", "category", "end_source",
                  "open", "flag", "started_before", "active_after", "is_demo"]

    def filter_flag(self, queryset, name, value):
        return queryset.filter(flags__contains=[value])

    def filter_active_after(self, queryset, name, value):
        return queryset.exclude(ended_at__lte=value)


class RateCardFilterSet(StrictFilterSet):
    gpu_model = django_filters.CharFilter()
    strategy = django_filters.ChoiceFilter(choices=Strategy.choices)
    currency = django_filters.CharFilter()

    class Meta:
        model = RateCard
        fields = ["gpu_model", "strategy", "currency"]

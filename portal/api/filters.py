import datetime

import django_filters
from rest_framework.exceptions import ValidationError


BOOLEAN_VALUES = frozenset({"true", "false", "True", "False", "1", "0"})


class StrictFilterSet(django_filters.FilterSet):
    """A filter given in the query string but left empty is a mistake, not "no filter": say so (400)."""

    def __init__(self, data=None, *args, **kwargs):
        if data is not None:
            empty = sorted(key for key in self.base_filters if key in data and data.get(key) == "")
            if empty:
                raise ValidationError({key: ["Give a value or leave the parameter out."] for key in empty})
            with_nul = sorted(key for key in self.base_filters if any("\x00" in v for v in _values(data, key)))
            if with_nul:
                raise ValidationError({key: ["May not contain the NUL character."] for key in with_nul})
            # django-filter reads anything but true/false as "unknown" and drops the filter; an API says no.
            not_boolean = sorted(
                key for key, spec in self.base_filters.items()
                if isinstance(spec, django_filters.BooleanFilter) and key in data
                and any(v not in BOOLEAN_VALUES for v in _values(data, key))
            )  # fmt: skip
            if not_boolean:
                raise ValidationError({key: ["Must be true or false."] for key in not_boolean})
        super().__init__(data, *args, **kwargs)

    def filter_queryset(self, queryset):
        # ISO 8601 allows offsets PostgreSQL rejects (beyond +-15:59): compare in UTC, as stored.
        for name, value in list(self.form.cleaned_data.items()):
            if isinstance(value, datetime.datetime) and value.tzinfo is not None:
                self.form.cleaned_data[name] = value.astimezone(datetime.UTC)
        return super().filter_queryset(queryset)


def _values(data, key) -> list[str]:
    return data.getlist(key) if hasattr(data, "getlist") else [str(data.get(key, ""))]

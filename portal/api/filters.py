from datetime import datetime
from datetime import timezone as dt_timezone

import django_filters
from rest_framework.exceptions import ValidationError


BOOLEAN_VALUES = {"true", "false", "1", "0"}


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
            # Booleans are true or false; django-filter would read anything else as "unknown" and not filter.
            not_boolean = sorted(
                key for key, flt in self.base_filters.items()
                if isinstance(flt, django_filters.BooleanFilter) and key in data
                and any(v.lower() not in BOOLEAN_VALUES for v in _values(data, key))
            )
            if not_boolean:
                raise ValidationError({key: ["Must be true or false."] for key in not_boolean})
        super().__init__(data, *args, **kwargs)

    def filter_queryset(self, queryset):
        # Times go to PostgreSQL in UTC: it refuses offsets beyond +-15:59 that Python accepts.
        for name, value in list(self.form.cleaned_data.items()):
            if isinstance(value, datetime) and value.tzinfo is not None:
                try:
                    self.form.cleaned_data[name] = value.astimezone(dt_timezone.utc)
                except OverflowError:
                    raise ValidationError({name: ["This time is out of range."]}) from None
        return super().filter_queryset(queryset)


def _values(data, key) -> list[str]:
    return data.getlist(key) if hasattr(data, "getlist") else [str(data.get(key, ""))]

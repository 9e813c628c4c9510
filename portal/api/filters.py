import django_filters
from rest_framework.exceptions import ValidationError


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
        super().__init__(data, *args, **kwargs)


def _values(data, key) -> list[str]:
    return data.getlist(key) if hasattr(data, "getlist") else [str(data.get(key, ""))]

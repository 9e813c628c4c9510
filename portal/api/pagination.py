from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    """`{count, next, previous, results}`, 50 a page by default, up to 500 with `?page_size=`. A malformed
    `page` or `page_size` is a 400 naming it, not silently replaced by a default."""

    page_size_query_param = "page_size"
    max_page_size = 500

    def _positive_int(self, request, name: str, maximum: int | None = None) -> int | None:
        raw = request.query_params.get(name)
        if raw is None:
            return None
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1 or (maximum and int(raw) > maximum):
            bound = f" and at most {maximum}" if maximum else ""
            raise ValidationError({name: [f"Must be a whole number of at least 1{bound}."]})
        return int(raw)

    def get_page_size(self, request):
        return self._positive_int(request, self.page_size_query_param, self.max_page_size) or self.page_size

    def paginate_queryset(self, queryset, request, view=None):
        self._positive_int(request, self.page_query_param)
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters

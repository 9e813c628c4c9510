from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    """`{count, next, previous, results}`, 50 a page by default, up to 500 with `?page_size=`."""

    page_size_query_param = "page_size"
    max_page_size = 500

"""Admin access by role rather than per-model Django permissions: the platform team operates the admin;
finance may look at what it is allowed to read; engineers use the portal pages and the API."""
from __future__ import annotations

from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.http import Http404

from .roles import is_finance, is_platform


class PlatformAdminMixin:
    """Platform team: full access. Others: none."""

    finance_can_view = False
    finance_can_edit = False  # finance may also add, change and delete (rate cards)

    def has_module_permission(self, request):
        return is_platform(request.user) or (
            (self.finance_can_view or self.finance_can_edit) and is_finance(request.user)
        )

    def has_view_permission(self, request, obj=None):
        return self.has_module_permission(request)

    def _can_edit(self, request) -> bool:
        return is_platform(request.user) or (self.finance_can_edit and is_finance(request.user))

    def has_add_permission(self, request, *args):
        return self._can_edit(request)

    def has_change_permission(self, request, obj=None):
        return self._can_edit(request)

    def has_delete_permission(self, request, obj=None):
        return self._can_edit(request)

    def object_or_404(self, request, object_id, queryset=None):
        """The object named by an id from the URL, for the admin's own pages. An id that is not one ("abc",
        "1.5") is a 404 like an unknown one, never a database error."""
        queryset = self.get_queryset(request) if queryset is None else queryset
        try:
            return queryset.get(pk=unquote(str(object_id)))
        except (queryset.model.DoesNotExist, ValidationError, ValueError, TypeError, OverflowError):
            raise Http404(f"No {queryset.model._meta.verbose_name} with id {object_id!r}.") from None


class ReadOnlyAdminMixin(PlatformAdminMixin):
    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

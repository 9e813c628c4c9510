"""Admin access by role rather than per-model Django permissions: the platform team operates the admin;
finance may look at what it is allowed to read; engineers use the portal pages and the API."""
from __future__ import annotations

from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import ValidationError
from django.http import Http404

from .roles import is_finance, is_platform


class PortalChangeList(ChangeList):
    """Django's change list, with a date-hierarchy year too large for a date (`?started_at__year=9999999999`) an
    invalid lookup like any other (the admin redirects with `?e=1`) instead of an OverflowError and a 500."""

    def get_filters(self, request):
        try:
            return super().get_filters(request)
        except OverflowError as exc:
            raise IncorrectLookupParameters(exc) from exc


class PlatformAdminMixin:
    """Platform team: full access. Others: none."""

    finance_can_view = False
    finance_can_edit = False  # finance may also add, change and delete (rate cards)

    def get_changelist(self, request, **kwargs):
        return PortalChangeList

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


class BackgroundJobAdminMixin(ReadOnlyAdminMixin):
    """The admin of a `portal.jobs.BackgroundJob` table. Its rows are written by the workers, so they are read
    only; the list shows each row's own columns (`list_display`) followed by the job's status, attempts, last
    message and times, is filtered by status first, and is searchable by message: a failure is found the same way
    in every job table."""

    job_columns = ("status", "attempts", "message", "created_at", "updated_at")

    def get_list_display(self, request):
        own = list(super().get_list_display(request))
        return [*own, *(column for column in self.job_columns if column not in own)]

    def get_list_filter(self, request):
        return ["status", *(f for f in super().get_list_filter(request) if f != "status")]

    def get_search_fields(self, request):
        own = list(super().get_search_fields(request))
        return own if "message" in own else [*own, "message"]

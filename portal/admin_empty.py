"""Admin lists that stay empty until something outside the portal happens say so, instead of "0 items"."""
from __future__ import annotations


class EmptyExplainedMixin:
    """Set `empty_why`: shown above an empty change list (e.g. rows that only a live cluster's API fills)."""

    empty_why = ""
    change_list_template = "admin/empty_explained_change_list.html"

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {**(extra_context or {}), "empty_why": self.empty_why})

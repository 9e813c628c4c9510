"""Posting the admin's change forms as a browser would: every field of the form and its inlines with the values
the page shows, then the changes a test makes."""
from __future__ import annotations

from typing import Any


def _bound_values(form) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in form.fields:
        bound = form[name]
        value = bound.value()
        if isinstance(value, bool):
            if value:
                data[bound.html_name] = "on"
        elif isinstance(value, (list, tuple)):
            data[bound.html_name] = [str(v) for v in value]
        else:
            data[bound.html_name] = "" if value is None else str(value)
    return data


def change_form_data(page, **changes: Any) -> dict[str, Any]:
    """The POST data of the admin change form in `page` (a GET response), with `changes` to the main form."""
    data = _bound_values(page.context["adminform"].form)
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update(_bound_values(formset.management_form))
        for form in formset.forms:
            data.update(_bound_values(form))
    data.update(changes)
    return data

"""Forms of the portal's own pages (API tokens)."""
from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils import timezone

EXPIRY_CHOICES = [("", "never"), ("7", "in 7 days"), ("30", "in 30 days"), ("90", "in 90 days"), ("365", "in a year")]


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. a script or a CI job.")
    expires_in_days = forms.TypedChoiceField(choices=EXPIRY_CHOICES, coerce=int, empty_value=None, required=False,
                                             label="Expires")

    def expires_at(self):
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + timedelta(days=days) if days else None

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils import timezone

from .choices import GROUP_BY_CHOICES
from .periods import add_months, month_start, period_error

GROUP_BY_LABELS = {"team": "Team", "cost_center": "Cost centre", "cluster": "Cluster", "strategy": "Strategy",
                   "gpu_model": "GPU model", "mig_profile": "MIG profile", "request": "Request", "month": "Month",
                   "day": "Day"}


def default_period():
    """Last calendar month: complete, and what finance bills."""
    this_month = month_start(timezone.now().date())
    return add_months(this_month, -1), this_month


class ReportForm(forms.Form):
    start = forms.DateField(input_formats=["%Y-%m-%d"], widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(input_formats=["%Y-%m-%d"], widget=forms.DateInput(attrs={"type": "date"}),
                          help_text="the day after the last day (the period is [start, end), UTC)")
    group_by = forms.MultipleChoiceField(choices=[(k, GROUP_BY_LABELS[k]) for k in GROUP_BY_CHOICES], required=False,
                                         widget=forms.CheckboxSelectMultiple)

    def __init__(self, data=None, **kwargs):
        start, end = default_period()
        if data is not None and not any(k in data for k in ("start", "end", "group_by")):
            data = None  # first visit: the defaults
        super().__init__(data, initial={"start": start, "end": end, "group_by": ["team", "strategy", "gpu_model"]},
                         **kwargs)

    def clean(self):
        data = super().clean()
        if "start" in data and "end" in data:
            error = period_error(data["start"], data["end"], max_days=settings.CHARGEBACK_MAX_REPORT_DAYS)
            if error:
                self.add_error("end", error)
        return data

    def period(self) -> dict:
        """start, end and group_by: cleaned when bound, the defaults otherwise."""
        if self.is_bound:
            return {k: self.cleaned_data[k] for k in ("start", "end", "group_by")}
        return {k: self.initial[k] for k in ("start", "end", "group_by")}

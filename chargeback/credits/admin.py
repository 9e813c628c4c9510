"""Hardware-fault credits in the admin: finance and the platform team read them and reverse one, with a reason,
through the same service the history records (chargeback.credits.services.credit_reverse)."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from portal.admin_mixins import ReadOnlyAdminMixin
from portal.errors import DomainError
from portal.roles import is_finance, is_platform

from .models import HardwareCredit
from .services import credit_reverse


class ReverseCreditForm(forms.Form):
    reason = forms.CharField(max_length=200, help_text="why the credit no longer holds, kept with it")


@admin.register(HardwareCredit)
class HardwareCreditAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    finance_can_view = True
    list_display = ["ended_at", "pod_name", "team", "request", "gpu_model", "mig_profile", "started_at", "reason",
                    "state", "reverse_link"]
    list_filter = ["cluster", "strategy", ("reversed_at", admin.EmptyFieldListFilter)]
    list_select_related = ["team", "request"]
    search_fields = ["pod_name", "pod_uid", "reason"]

    @admin.display(description="state")
    def state(self, obj) -> str:
        return f"reversed {obj.reversed_at:%Y-%m-%d}: {obj.reversal_reason}" if obj.reversed_at else "credited"

    @admin.display(description="")
    def reverse_link(self, obj) -> str:
        if obj.reversed_at:
            return ""
        url = reverse("admin:chargeback_hardwarecredit_reverse", args=[obj.pk])
        return format_html('<a href="{}" data-testid="reverse-credit">Reverse</a>', url)

    def get_urls(self):
        return [path("<path:object_id>/reverse/", self.admin_site.admin_view(self.reverse_view),
                     name="chargeback_hardwarecredit_reverse"), *super().get_urls()]

    def reverse_view(self, request, object_id):
        changelist = reverse("admin:chargeback_hardwarecredit_changelist")
        if not (is_finance(request.user) or is_platform(request.user)):
            messages.error(request, "Only finance and the platform team reverse credits.")
            return HttpResponseRedirect(changelist)
        credit = self.object_or_404(request, object_id)
        form = ReverseCreditForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                credit_reverse(credit=credit, user=request.user, reason=form.cleaned_data["reason"])
            except DomainError as exc:
                form.add_error("reason" if exc.field == "reason" else None, exc.message)
            else:
                messages.success(request, f"The credit for {credit.pod_name} is reversed.")
                return HttpResponseRedirect(changelist)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
                   "title": "Reverse a hardware-fault credit", "credit": credit}
        return TemplateResponse(request, "admin/chargeback/hardwarecredit/reverse.html", context)

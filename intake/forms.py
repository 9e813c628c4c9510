"""The questionnaire as a web form, generated from intake.questionnaire; validation is `normalise_answers`."""
from __future__ import annotations

from django import forms

from portal.models import Team, slug_validator

from .answers import AnswersInvalid, normalise_answers
from .questionnaire import QUESTIONS, Question


def _form_field(question: Question) -> forms.Field:
    # Every answer field is optional in the form: leaving one empty means "use the default" (and the
    # decision then marks it as inherited), or yields the questionnaire's "required" error.
    common = {"required": False, "label": question.label, "help_text": question.help}
    placeholder = f"default: {question.default}" if question.default is not None else ""
    if question.kind == "choice":
        empty = [("", f"— default: {question.default} —" if question.default else "— choose —")]
        return forms.ChoiceField(choices=empty + [(o.value, o.label) for o in question.options], **common)
    if question.kind in {"integer", "number"}:
        attrs = {"placeholder": placeholder, "step": "1" if question.kind == "integer" else "any"}
        return forms.CharField(widget=forms.NumberInput(attrs=attrs), **common)
    if question.kind == "image":
        return forms.CharField(max_length=question.max_length, **common,
                               widget=forms.TextInput(attrs={"placeholder": "nvcr.io/nvidia/pytorch:25.01-py3"}))
    return forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "placeholder": "one argument per line"}), **common)


class CancelForm(forms.Form):
    """Cancelling destroys what was provisioned, so the page asks for an explicit confirmation (no JavaScript)."""

    comment = forms.CharField(required=False, max_length=1000, label="Why (optional)")
    confirm = forms.BooleanField(
        required=True, label="Yes, cancel this request",
        error_messages={"required": "Tick “Yes, cancel this request” to confirm: nothing was cancelled."},
    )


class LeaseExtendForm(forms.Form):
    hours = forms.FloatField(min_value=0.01, max_value=8760, label="Hours to add")


class RequestForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    name = forms.CharField(max_length=63, validators=[slug_validator],
                           help_text="A short DNS-style name: lower-case letters, digits and '-'.")

    def __init__(self, *args, teams=None, require_name=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams if teams is not None else Team.objects.none()
        self.fields["name"].required = require_name
        for question in QUESTIONS:
            self.fields[question.key] = _form_field(question)
        self.answers = None

    def raw_answers(self) -> dict:
        raw = {}
        for question in QUESTIONS:
            value = self.data.get(question.key, "")
            if question.kind == "string_list":
                value = [line for line in value.splitlines() if line.strip()]
            if value not in ("", []):
                raw[question.key] = value
        return raw

    def clean(self):
        cleaned = super().clean()
        try:
            self.answers = normalise_answers(self.raw_answers())
        except AnswersInvalid as exc:
            for key, messages in exc.errors.items():
                self.add_error(key if key in self.fields else None, " ".join(messages))
        return cleaned

    def sections(self):
        """Fields grouped by questionnaire section, for the template."""
        groups: dict[str, list] = {}
        for question in QUESTIONS:
            groups.setdefault(question.section, []).append(self[question.key])
        return groups.items()

"""Template filters that turn vocabulary values into words: ``{{ decision.strategy|words:"strategy" }}``.

Pages show words; the API keeps the identifiers. Every vocabulary is looked up here, from the dicts and labels
defined once elsewhere (intake/words.py, the strategies of intake/decisions.py, the statuses, the questionnaire).
"""
from __future__ import annotations

import re
from fractions import Fraction

from django import template

from gpu.vocabulary import FITS_AFTER, FITS_NOW, NEVER_FITS
from intake import words as vocabulary
from intake.choices import RequestStatus
from intake.decisions import STRATEGY_WORDS
from intake.questionnaire import QUESTIONS
from portal.text import plural as plural_text

register = template.Library()

VOCABULARIES: dict[str, dict[str, str]] = {
    "strategy": STRATEGY_WORDS,
    "status": {status.value: status.label.lower() for status in RequestStatus},
    "scheduling_model": vocabulary.SCHEDULING_MODEL_WORDS,
    "gang_backend": vocabulary.GANG_BACKEND_WORDS,
    "memory_isolation": vocabulary.MEMORY_ISOLATION_WORDS,
    "fabric_isolation": vocabulary.FABRIC_ISOLATION_WORDS,
    "fit_verdict": {FITS_NOW: "fits now", FITS_AFTER: "fits after other work finishes", NEVER_FITS: "never fits"},
    # Answers: each choice question's option labels, under the question's key ("workload_class", "tenancy", ...).
    **{q.key: {o.value: o.label.lower() for o in q.options} for q in QUESTIONS if q.kind == "choice"},
}
FIELD_WORDS = {**vocabulary.DECISION_FIELD_WORDS, **{q.key: q.label for q in QUESTIONS}}


def value_words(value, kind: str = "") -> str:
    """`value` in words, from the vocabulary `kind` (or the first vocabulary that knows it)."""
    if value is None or value == "":
        return ""
    text = str(value)
    if kind:
        # A kind with no vocabulary (a number, an image reference) is shown as it is.
        known = VOCABULARIES.get(kind)
        return text if known is None else known.get(text, vocabulary.humanise(text))
    for words in VOCABULARIES.values():
        if text in words:
            return words[text]
    return vocabulary.humanise(text)


@register.filter
def words(value, kind: str = "") -> str:
    return value_words(value, kind)


@register.filter
def field_words(key) -> str:
    """An answer key as its question, a decision field as its name ("gpu_memory_gb" -> "GPU memory needed ...")."""
    return FIELD_WORDS.get(str(key), vocabulary.humanise(key))


@register.filter
def plural(count, forms: str) -> str:
    """``{{ n|plural:"node" }}`` -> "1 node" / "3 nodes"; irregular: ``{{ n|plural:"policy,policies" }}``."""
    singular, _, plural_form = forms.partition(",")
    return plural_text(count, singular, plural_form or None)


OUTCOME_KEY_WORDS = {"strategy": "strategy", "fallback_strategy": "else", "forbid_strategies": "never",
                     "replace_with": "instead", "auto_approve": "approved automatically",
                     "auto_approve_limits": "automatic approval limits", "fabric_isolation": "fabric",
                     "allowed_gpu_models": "GPU models", "gang": "gang-scheduled", "lease": "lease"}


def _outcome_value(key: str, value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_outcome_value(key, v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{vocabulary.humanise(k)} {_outcome_value(k, v)}" for k, v in value.items())
    return value_words(value, "strategy" if "strateg" in key or key == "replace_with" else "")


@register.filter
def outcome_words(outcome) -> str:
    """A rule's outcome (a dict in the policy) as a line of words: "strategy MIG slice; else whole GPU; ..."."""
    if not outcome:
        return "—"
    if not isinstance(outcome, dict):
        return value_words(outcome)
    return "; ".join(f"{OUTCOME_KEY_WORDS.get(k, vocabulary.humanise(k))}: {_outcome_value(k, v)}"
                     for k, v in outcome.items())


@register.filter
def change_words(value, field: str) -> str:
    """One side of a changed decision field in the policy diff ("—" when absent)."""
    if value is None:
        return "—"
    return _outcome_value(field, value) if isinstance(value, (list, dict, bool)) else value_words(value, field)


def fraction_words(value) -> str:
    """0.142857 -> "1/7", 4.285714 -> "4 2/7", 16.0 -> "16": the share of a GPU as people read it (a MIG slice is
    so many sevenths or eighths, a shared GPU a fraction of its replicas)."""
    if value is None or value == "":
        return ""
    fraction = Fraction(str(value)).limit_denominator(64)
    if fraction.denominator == 1:
        return str(fraction.numerator)
    whole, rest = divmod(fraction.numerator, fraction.denominator)
    return f"{whole} {rest}/{fraction.denominator}" if whole else f"{rest}/{fraction.denominator}"


@register.filter
def gpu_equivalents(value) -> str:
    """``{{ 0.142857|gpu_equivalents }}`` -> "1/7 GPU equivalent", 2 -> "2 GPU equivalents"."""
    shown = fraction_words(value)
    return f"{shown} GPU equivalent{'' if shown == '1' or ('/' in shown and ' ' not in shown) else 's'}"


@register.filter
def event_reason_words(reason) -> str:
    """A cluster event's machine-readable cause as words: "AllRunning" -> "all running", "OOMKilled" -> "OOM killed"."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", str(reason or "")).lower().replace(
        "oom ", "OOM ").replace("_", " ")


@register.filter
def fraction(value) -> str:
    return fraction_words(value)


@register.filter
def timedelta_words(delta) -> str:
    """``{{ left|timedelta_words }}`` -> "6 days 23 hours", "5 hours 10 minutes", "12 minutes"."""
    seconds = int(delta.total_seconds())
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    if days:
        return " ".join(p for p in (plural_text(days, "day"), plural_text(hours, "hour") if hours else "") if p)
    if hours:
        return " ".join(p for p in (plural_text(hours, "hour"), plural_text(minutes, "minute") if minutes else "") if p)
    return plural_text(max(minutes, 1), "minute")

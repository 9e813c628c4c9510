"""Validation and normalisation of questionnaire answers: one function used by the API, the web form and the
services, driven by the questionnaire definition."""
from __future__ import annotations

import math
from typing import Any

from .image_reference import image_reference_error
from .questionnaire import QUESTIONS, QUESTIONS_BY_KEY, NormalisedAnswers, Question


class AnswersInvalid(Exception):
    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(errors)
        self.errors = errors


def _number(question: Question, value: Any, integer: bool):
    if isinstance(value, bool):
        raise ValueError("Must be a number, not true/false.")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise ValueError("Must be a whole number." if integer else "Must be a number.") from None
    if integer:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise ValueError("Must be a whole number.")
    elif not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError("Must be a finite number.")
    unit = f" {question.unit}" if question.unit else ""
    if question.minimum is not None:
        if question.exclusive_minimum and value <= question.minimum:
            raise ValueError(f"Must be greater than {question.minimum:g}{unit}.")
        if not question.exclusive_minimum and value < question.minimum:
            raise ValueError(f"Must be at least {question.minimum:g}{unit}.")
    if question.maximum is not None and value > question.maximum:
        raise ValueError(f"Must be at most {question.maximum:g}{unit}.")
    return value


def _clean(question: Question, value: Any):
    if question.kind == "choice":
        allowed = [o.value for o in question.options]
        if value not in allowed:
            raise ValueError(f"Must be one of: {', '.join(allowed)}.")
        return value
    if question.kind == "integer":
        return _number(question, value, integer=True)
    if question.kind == "number":
        return _number(question, value, integer=False)
    if question.kind == "image":
        if not isinstance(value, str):
            raise ValueError("Must be a string.")
        if len(value) > question.max_length:
            raise ValueError(f"Must be at most {question.max_length} characters.")
        error = image_reference_error(value)
        if error:
            raise ValueError(error)
        return value
    if question.kind == "string_list":
        if not isinstance(value, list):
            raise ValueError("Must be a list of strings.")
        if len(value) > question.max_items:
            raise ValueError(f"At most {question.max_items} items.")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise ValueError(f"Item {index} must be a string.")
            if len(item) > question.max_length:
                raise ValueError(f"Item {index} must be at most {question.max_length} characters.")
            if "\x00" in item:
                raise ValueError(f"Item {index} contains a NUL character.")
        return list(value)
    raise ValueError(f"Unknown question kind {question.kind}")


def normalise_answers(raw: Any) -> NormalisedAnswers:
    """Validate raw answers; return them with defaults filled in. Raises AnswersInvalid (errors by key)."""
    if not isinstance(raw, dict):
        raise AnswersInvalid({"non_field_errors": ["Answers must be an object of question -> answer."]})
    errors: dict[str, list[str]] = {}
    for key in raw:
        if key not in QUESTIONS_BY_KEY:
            errors[str(key)] = [f"Unknown question; the questionnaire asks: {', '.join(QUESTIONS_BY_KEY)}."]
    values: dict[str, Any] = {}
    defaulted = set()
    for question in QUESTIONS:
        value = raw.get(question.key)
        if value is None or (isinstance(value, (str, list)) and not value and question.kind != "string_list"):
            if question.required:
                errors[question.key] = ["This answer is required."]
            elif question.default is not None:
                values[question.key] = question.default
                defaulted.add(question.key)
            else:
                values[question.key] = [] if question.kind == "string_list" else None
            continue
        try:
            values[question.key] = _clean(question, value)
        except ValueError as exc:
            errors[question.key] = [str(exc)]
    if errors:
        raise AnswersInvalid(errors)
    return NormalisedAnswers(values=values, defaulted=frozenset(defaulted))

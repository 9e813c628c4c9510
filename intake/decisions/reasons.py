"""How a decision explains itself: the reasons it collects (each naming where it came from) and the error that
names the answer to change, with the few number words they are written with."""
from __future__ import annotations

from dataclasses import dataclass, field

from portal.text import plural

from .decision import Reason
from .inputs import RuleSpec


class PlacementImpossible(Exception):
    """No pool can serve these answers. `field` names the answer to change."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass
class Reasons:
    items: list[Reason] = field(default_factory=list)

    def add(self, field_name: str, text: str, rule: RuleSpec | None = None, *, source: str | None = None):
        self.items.append(Reason(field=field_name, text=text, source=source or ("policy" if rule else "default"),
                                 rule=rule.key if rule else None))


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def gb(value: float) -> str:
    return f"{value:g} GB"


def number(value) -> str:
    return f"{float(value):.3f}".rstrip("0").rstrip(".")


def hours_words(hours: float) -> str:
    if hours % 24 == 0:
        return plural(int(hours // 24), "day")
    return plural(int(hours), "hour") if float(hours).is_integer() else f"{hours:g} hours"

"""Errors of the renderer and of manifest validation (plain exceptions, no Django)."""

from __future__ import annotations

from dataclasses import dataclass


class RenderError(ValueError):
    """The inputs describe something that cannot be rendered (e.g. native gang on Kubernetes 1.34).

    The message says what is wrong and what to change; it is shown to the platform team as is.
    """


@dataclass(frozen=True)
class Problem:
    kind: str
    name: str
    path: str  # JSON path inside the object, e.g. "$.spec.template.spec.containers[0].resources"
    message: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name} at {self.path}: {self.message}"


class ManifestInvalid(ValueError):
    """One or more rendered objects do not match their schema. `problems` lists every finding."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} schema problem(s) in rendered manifests:\n{lines}")

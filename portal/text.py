"""Small helpers for sentences people read: counts with the right noun form."""
from __future__ import annotations


def plural(count, singular: str, plural_form: str | None = None) -> str:
    """``1 node``, ``2 nodes``, ``0 nodes``; irregular forms are passed in (``plural(n, "policy", "policies")``)."""
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count} {word}"

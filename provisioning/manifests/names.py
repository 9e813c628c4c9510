"""The one slug helper: every Kubernetes name and label value the renderer writes comes from here.

`k8s_name()` turns arbitrary parts into a DNS-1123 label. It is deterministic and injective in practice: when
it has to change the input (characters outside ``[a-z0-9-]``, upper case) or shorten it, it appends a short
hash of the *raw* input, so "ml_research" and "ml-research", or two long names differing only at the end,
never end up as the same Kubernetes object.
"""

from __future__ import annotations

import hashlib
import re

DNS_LABEL_MAX = 63
HASH_LENGTH = 8
# Room left in a request's base name for child suffixes ("-headless", "-gpu", ...) and for the
# "-<index>" an Indexed Job appends to form pod hostnames (which must stay within 63 characters).
BASE_NAME_MAX = 47

_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9-]+")
_INVALID_LABEL_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_DASHES = re.compile(r"-{2,}")
DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def short_hash(*parts: object, length: int = HASH_LENGTH) -> str:
    # A unit separator cannot appear in names, so ("a-b",) and ("a", "b") hash differently.
    raw = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(raw.encode()).hexdigest()[:length]


def k8s_name(*parts: object, max_length: int = DNS_LABEL_MAX, dns1035: bool = False) -> str:
    """A DNS-1123 label built from `parts` joined with '-'.

    Lowercases, replaces anything outside ``[a-z0-9-]`` with '-', collapses and trims dashes. If that changed
    the input, or the result is longer than `max_length`, a hash of the raw parts is appended (after
    truncating), which keeps distinct inputs distinct. `dns1035=True` also guarantees a leading letter
    (Service names).
    """
    if max_length < HASH_LENGTH + 2:
        raise ValueError(f"max_length {max_length} leaves no room for a hash suffix")
    raw = "-".join(str(p) for p in parts if str(p) != "")
    name = _DASHES.sub("-", _INVALID_NAME_CHARS.sub("-", raw.lower())).strip("-")
    lossy = name != raw or not name
    if dns1035 and not name[:1].isalpha():
        name = f"n-{name}" if name else "n"
        lossy = True
    if not lossy and len(name) <= max_length:
        return name
    suffix = short_hash(*parts)
    head = name[: max_length - HASH_LENGTH - 1].rstrip("-")
    return f"{head}-{suffix}" if head else (f"n{suffix}" if dns1035 else suffix)


def label_value(value: object) -> str:
    """A valid label value (<= 63 chars of ``[A-Za-z0-9._-]``, alphanumeric at both ends; may be empty).

    Used for free text such as cost centres; like `k8s_name` it appends a hash when it had to alter the text.
    """
    raw = str(value)
    if LABEL_VALUE.match(raw) and len(raw) <= DNS_LABEL_MAX:
        return raw
    cleaned = _INVALID_LABEL_CHARS.sub("-", raw)
    cleaned = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned)
    head = cleaned[: DNS_LABEL_MAX - HASH_LENGTH - 1]
    head = re.sub(r"[^A-Za-z0-9]+$", "", head)
    suffix = short_hash(raw)
    return f"{head}-{suffix}" if head else suffix


def team_namespace(team_slug: str) -> str:
    """The team's namespace, e.g. ``gpu-ml-research``."""
    return k8s_name("gpu", team_slug)


def team_queue_name(team_slug: str) -> str:
    """Name of the team's scheduler queue (Kueue LocalQueue, KAI/Volcano Queue): same as its namespace."""
    return team_namespace(team_slug)


def request_base_name(name: str, request_id: int) -> str:
    """``<request-name>-r<request_id>``; the request name is shortened (with a hash) so the id stays visible."""
    suffix = f"-r{int(request_id)}"
    return k8s_name(name, max_length=BASE_NAME_MAX - len(suffix)) + suffix


def child_name(base: str, suffix: str) -> str:
    """An object derived from a request's base name, e.g. ``<base>-gpu`` for its ResourceClaimTemplate."""
    return k8s_name(base, suffix)


def service_name(base: str, suffix: str = "") -> str:
    """A Service name (DNS-1035: must start with a letter)."""
    return k8s_name(base, suffix, dns1035=True)


# The preview renders before the request has an id. Names keep the id (a cancelled request's objects may still be
# being deleted when a new request of the same name arrives, and reconciliation finds objects by the id label), so
# the preview shows it as this placeholder, which no Kubernetes name can contain.
ID_PLACEHOLDER = "<id>"
# The largest id the placeholder is checked against: a preview name is exact for every id up to it.
PREVIEW_MAX_ID = 10**12 - 1


def preview_name(name: str, *, with_small_id: str, with_large_id: str) -> str | None:
    """The name an object will have, given the same object rendered for request 1 and for `PREVIEW_MAX_ID`.

    Returns the name itself when it does not depend on the id, the name with `ID_PLACEHOLDER` in place of the id
    when the id only appears as the base name's ``-r<id>``, and None when the id changes more than that (a long
    name shortened with a hash): then only submitting tells the name.
    """
    if with_small_id == with_large_id:
        return with_small_id
    small, large = request_base_name(name, 1), request_base_name(name, PREVIEW_MAX_ID)
    if not (small.endswith("-r1") and large == f"{small[:-1]}{PREVIEW_MAX_ID}"):
        return None  # the request name itself was shortened differently for a longer id
    if with_small_id.startswith(small) and with_large_id.startswith(large):
        rest = with_small_id[len(small):]
        if rest == with_large_id[len(large):]:
            return f"{small[:-1]}{ID_PLACEHOLDER}{rest}"
    return None

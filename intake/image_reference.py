"""Container image references: the OCI distribution reference grammar, ASCII only, checked before a reference can
reach a manifest. Django-free: the questionnaire's JSON Schema carries the same pattern.

The grammar is distribution/reference v0.6.0 `regexp.go` (github.com/distribution/reference, as vendored in
kubernetes/kubernetes under vendor/github.com/distribution/reference/), with these deliberate differences:

- ASCII only. Go's `\\w` and `[0-9]` are ASCII; Python's `\\w` is not, so `pytorch:ｌａｔｅｓｔ` or `nginx:١٢٣`
  would otherwise pass. Every class here is spelled out.
- The first component is a registry only when the runtime would read it as one (`splitDockerDomain` in
  `normalize.go` of the same version): it contains a "." or a port, or is `localhost`. `NVIDIA/pytorch` is
  then an upper-case repository (refused), not a registry host called NVIDIA.
- Ports are 1-65535 without leading zeros (the Go grammar allows any digits).
- No bracketed IPv6 registry (`[::1]:5000/app`): a registry is named by host name or IPv4 address. Schema
  fuzzers (schemathesis 4.32) cannot generate strings for a pattern holding a literal "[", and nobody here
  pulls from an IPv6 literal.
- Digests are the algorithms the OCI image spec registers (descriptor.md): sha256 (64 lower-case hex digits)
  and sha512 (128).
- A name is at most 255 characters (`NameTotalLengthMax` in `reference.go`), and a bare 64-hex-digit name is
  refused as the runtime refuses it (`anchoredIdentifierRegexp`: it looks like an image id).
"""
from __future__ import annotations

import re

NAME_TOTAL_LENGTH_MAX = 255

_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALPHANUMERIC}(?:{_SEPARATOR}{_ALPHANUMERIC})*"
_REMOTE_NAME = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
# A registry: a dotted host (or IPv4 address), any host with a port, or localhost.
_DOMAIN = (
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})+(?::{_PORT})?"
    rf"|{_DOMAIN_COMPONENT}:{_PORT}"
    rf"|localhost)"
)
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})"

PATTERN = rf"^(?:{_DOMAIN}/)?{_REMOTE_NAME}(?::{_TAG})?(?:@{_DIGEST})?$"
IMAGE_REFERENCE_RE = re.compile(PATTERN, re.ASCII)
_NAMED = re.compile(
    rf"^(?P<name>(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_REMOTE_NAME}))(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$",
    re.ASCII,
)
_IDENTIFIER = re.compile(r"^[a-f0-9]{64}$", re.ASCII)
_PORT_AFTER_HOST = re.compile(r"^[^/]+:(\d+)/")

EXAMPLE = "nvcr.io/nvidia/pytorch:25.01-py3"


def image_reference_error(value: str) -> str | None:
    """Why `value` is not an image reference the cluster would pull (one sentence naming the part), or None."""
    if not value.isascii():
        odd = next(char for char in value if not char.isascii())
        return f"Use ASCII characters only ({odd!r} is not); e.g. {EXAMPLE}."
    match = _NAMED.fullmatch(value)
    if match is None:
        return _diagnose(value)
    if len(match["name"]) > NAME_TOTAL_LENGTH_MAX:
        return f"The name (registry and repository) may be at most {NAME_TOTAL_LENGTH_MAX} characters."
    if _IDENTIFIER.fullmatch(match["path"]) and not match["domain"]:
        return "A 64-hex-digit name is an image id, not a repository; give the repository (and @sha256:digest)."
    return None


def _diagnose(value: str) -> str:
    port = _PORT_AFTER_HOST.match(value)
    if port and not re.fullmatch(_PORT, port[1], re.ASCII):
        return f"The registry port must be between 1 and 65535 (got {port[1]})."
    name = value.split("@", 1)[0]
    head, _, rest = name.partition("/")
    repository = rest if rest and ("." in head or ":" in head or head == "localhost") else name
    repository = repository.split(":", 1)[0]
    if repository != repository.lower():
        return f"Repository names are lower-case ({repository!r} is not)."
    if "@" in value and not re.search(rf"@{_DIGEST}$", value, re.ASCII):
        return "A digest is sha256: and 64 lower-case hex digits (or sha512: and 128)."
    return (
        f"Must be an image reference such as {EXAMPLE} "
        "(registry/path:tag or @sha256:digest; no spaces or special characters)."
    )

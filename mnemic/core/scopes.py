"""Scope paths: `/project/alpha` includes its subtree and nothing else.

Chroma has no prefix filter on strings, so each record also carries the list of its scope's
ancestors and a subtree query becomes list membership (`$contains`). `/a/b` never matches `/a/bc`
because membership compares whole segments.
"""

from __future__ import annotations

import re

ROOT = "/"
MAX_SCOPE_LENGTH = 512
MAX_SCOPE_DEPTH = 32
_SEGMENT = re.compile(r"^[\w.@:+-]{1,128}$", re.UNICODE)


def normalise_scope(scope: str | None) -> str:
    """Return the canonical form of a scope path, or raise ValueError saying what is wrong."""
    if scope is None:
        return ROOT
    if not isinstance(scope, str):
        raise TypeError(f"scope must be a string path like '/project/alpha', got {type(scope).__name__}")
    raw = scope.strip()
    if raw in ("", ROOT):
        return ROOT
    if len(raw) > MAX_SCOPE_LENGTH:
        raise ValueError(f"scope is {len(raw)} characters long; the limit is {MAX_SCOPE_LENGTH}")
    if not raw.startswith("/"):
        raw = "/" + raw
    segments = [s for s in raw.split("/") if s != ""]
    if len(segments) > MAX_SCOPE_DEPTH:
        raise ValueError(f"scope {scope!r} is {len(segments)} levels deep; the limit is {MAX_SCOPE_DEPTH}")
    for segment in segments:
        if segment in (".", ".."):
            raise ValueError(f"scope {scope!r} contains {segment!r}: relative segments are not allowed")
        if not _SEGMENT.match(segment):
            raise ValueError(
                f"scope {scope!r} has an invalid segment {segment!r}: use letters, digits and . _ - @ : +"
            )
    return "/" + "/".join(segments)


def ancestors(scope: str) -> list[str]:
    """`/a/b` → `['/', '/a', '/a/b']`: every subtree the scope belongs to."""
    canonical = normalise_scope(scope)
    if canonical == ROOT:
        return [ROOT]
    segments = canonical.strip("/").split("/")
    return [ROOT] + ["/" + "/".join(segments[: i + 1]) for i in range(len(segments))]


def join_scope(base: str, relative: str | None) -> str:
    """Place `relative` inside `base`; the result can never climb out of `base`."""
    base = normalise_scope(base)
    if relative is None:
        return base
    rel = normalise_scope(relative)
    if rel == ROOT:
        return base
    if base == ROOT:
        return rel
    return base + rel


def relative_to(scope: str, base: str) -> str:
    """The path of `scope` as seen from inside `base` (which must contain it)."""
    scope, base = normalise_scope(scope), normalise_scope(base)
    if base == ROOT:
        return scope
    if not is_within(scope, base):
        raise ValueError(f"scope {scope!r} is not inside {base!r}")
    rest = scope[len(base):]
    return rest or ROOT


def is_within(scope: str, base: str) -> bool:
    return normalise_scope(base) in ancestors(scope)

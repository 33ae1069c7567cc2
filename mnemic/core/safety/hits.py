"""A secret found in a text: its kind and where it sits. Every rule module reports these."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SecretHit:
    kind: str
    start: int
    end: int


# The context-free backstop: when it overlaps a rule that names the kind, the name wins.
GENERIC_KINDS = frozenset({"high_entropy_token"})


def merge(hits: list[SecretHit]) -> list[SecretHit]:
    """Overlapping hits as one span, in text order, named by the earliest specific rule."""
    if not hits:
        return []
    hits.sort(key=lambda h: (h.start, -(h.end - h.start)))
    merged = [hits[0]]
    for hit in hits[1:]:
        last = merged[-1]
        if hit.start < last.end:
            kind = hit.kind if last.kind in GENERIC_KINDS and hit.kind not in GENERIC_KINDS else last.kind
            merged[-1] = SecretHit(kind, last.start, max(last.end, hit.end))
            continue
        merged.append(hit)
    return merged

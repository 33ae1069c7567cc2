"""A secret found in a text: its kind and where it sits. Every rule module reports these."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SecretHit:
    kind: str
    start: int
    end: int


def merge(hits: list[SecretHit]) -> list[SecretHit]:
    """Overlapping hits as one span (the kind of the earliest), in text order."""
    if not hits:
        return []
    hits.sort(key=lambda h: (h.start, -(h.end - h.start)))
    merged = [hits[0]]
    for hit in hits[1:]:
        last = merged[-1]
        if hit.start < last.end:
            if hit.end > last.end:
                merged[-1] = SecretHit(last.kind, last.start, hit.end)
            continue
        merged.append(hit)
    return merged

"""What an extractor returns: `ExtractedFact`, the same shape whichever extractor found it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_FACT_CHARS = 400
DECISIONS: tuple[str, ...] = ("insert", "keep", "update", "invalidate")


@dataclass
class ExtractedFact:
    """One fact an extractor found. `targets` are record ids (aliases already resolved)."""

    text: str
    topic: str
    author: str = "user"
    from_tool: bool = False
    decision: str = "insert"
    targets: list[str] = field(default_factory=list)
    reason: str = ""
    correction: bool = False
    explicit: bool = False


def topic_allowed(fact: ExtractedFact, topics: Sequence[str]) -> bool:
    # "Remember that …" is an explicit instruction whatever its subject.
    return fact.topic in topics or (fact.explicit and "explicit_instructions" in topics)


__all__ = [
    "DECISIONS",
    "MAX_FACT_CHARS",
    "ExtractedFact",
    "topic_allowed",
]

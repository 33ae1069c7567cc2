"""What an extractor returns: `ExtractedFact`, the same shape whichever extractor found it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..safety import redact

MAX_FACT_CHARS = 400
MAX_REASON_CHARS = 500
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


def model_reason(value: Any) -> str:
    """A model's reason for a decision, as the audit trail keeps it. The model may have read a
    secret the screen could not single out in a message of its own (a bare "Sunflower#77" answering
    "what is the password?") and quote it while explaining why it stored nothing: the reason is
    redacted like a run's outputs, never refused, since refusing it would lose the decision."""
    if not isinstance(value, str):
        return ""
    return redact(value.strip()[:MAX_REASON_CHARS])[0]


def topic_allowed(fact: ExtractedFact, topics: Sequence[str]) -> bool:
    # "Remember that …" is an explicit instruction whatever its subject.
    return fact.topic in topics or (fact.explicit and "explicit_instructions" in topics)


__all__ = [
    "DECISIONS",
    "MAX_FACT_CHARS",
    "MAX_REASON_CHARS",
    "ExtractedFact",
    "model_reason",
    "topic_allowed",
]

"""Counters for the write pipeline, so refusals and LLM use can be seen rather than guessed.

`llm_calls["recall"]` exists to be looked at: recall never calls an LLM, and the count proves it.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

LLM_PURPOSES: tuple[str, ...] = ("extract", "reconcile", "recall")


class WriteStats:
    """Thread-safe counters; read them with attributes or `snapshot()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.secrets_refused = 0
            self.secrets_by_kind: Counter[str] = Counter()
            self.sensitive_refused = 0
            self.sensitive_by_category: Counter[str] = Counter()
            self.off_topic_dropped = 0
            self.llm_calls: Counter[str] = Counter({purpose: 0 for purpose in LLM_PURPOSES})
            self.llm_failures = 0
            self.llm_fallbacks = 0
            self.turns_observed = 0
            self.turns_opted_out = 0
            self.turns_extracted = 0
            self.facts_extracted = 0
            self.facts_inserted = 0
            self.facts_merged = 0
            self.facts_invalidated = 0

    def add_secrets(self, kinds: list[str]) -> None:
        if not kinds:
            return
        with self._lock:
            self.secrets_refused += len(kinds)
            self.secrets_by_kind.update(kinds)

    def add_sensitive(self, category: str) -> None:
        with self._lock:
            self.sensitive_refused += 1
            self.sensitive_by_category[category] += 1

    def add_llm_call(self, purpose: str) -> None:
        with self._lock:
            self.llm_calls[purpose] += 1

    def bump(self, name: str, amount: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "secrets_refused": self.secrets_refused,
                "secrets_by_kind": dict(self.secrets_by_kind),
                "sensitive_refused": self.sensitive_refused,
                "sensitive_by_category": dict(self.sensitive_by_category),
                "off_topic_dropped": self.off_topic_dropped,
                "llm_calls": dict(self.llm_calls),
                "llm_failures": self.llm_failures,
                "llm_fallbacks": self.llm_fallbacks,
                "turns_observed": self.turns_observed,
                "turns_opted_out": self.turns_opted_out,
                "turns_extracted": self.turns_extracted,
                "facts_extracted": self.facts_extracted,
                "facts_inserted": self.facts_inserted,
                "facts_merged": self.facts_merged,
                "facts_invalidated": self.facts_invalidated,
            }

    def __repr__(self) -> str:
        return f"WriteStats({self.snapshot()})"


__all__ = ["LLM_PURPOSES", "WriteStats"]

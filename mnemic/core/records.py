"""The memory record and a recall match: what every layer of mnemic passes around."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["fact", "lesson", "knowledge", "note"]
Author = Literal["user", "assistant", "operator", "agent", "system"]
SourceKind = Literal["conversation", "operator", "remember_tool", "tool_result", "document", "feedback"]
State = Literal["valid", "pending", "invalid"]

KINDS: tuple[str, ...] = ("fact", "lesson", "knowledge", "note")
AUTHORS: tuple[str, ...] = ("user", "assistant", "operator", "agent", "system")
SOURCE_KINDS: tuple[str, ...] = (
    "conversation", "operator", "remember_tool", "tool_result", "document", "feedback",
)
STATES: tuple[str, ...] = ("valid", "pending", "invalid")
# Text an agent fetched is not something the user said: it waits for an operator.
UNCONFIRMED_SOURCE_KINDS: frozenset[str] = frozenset({"tool_result", "document"})

MetadataValue = str | int | float | bool
# Metadata mnemic computes from text it has already screened: a note's per-field vectors, kept
# as base64. Not free text, so never read for secrets (a base64 run can look like a password).
NOTE_FIELD_VECTORS_KEY = "note_fields"
COMPUTED_METADATA_KEYS: frozenset[str] = frozenset({NOTE_FIELD_VECTORS_KEY})

_SPACES = re.compile(r"\s+")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC. A naive datetime is taken to be UTC already, wherever the public API
    accepts one (created_at, older_than, now): the machine's time zone must not decide which
    records a call reaches, and CrewAI, whose adapter passes naive times, means UTC by them.
    Raises OverflowError when the moment is past either end of datetime's range in UTC."""
    if moment.utcoffset() is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def normalise_text(text: str) -> str:
    """The form two statements share when they say the same thing in different case or spacing."""
    folded = unicodedata.normalize("NFKC", text).casefold().strip()
    folded = _SPACES.sub(" ", folded)
    return folded.rstrip(" .!")


def one_line(text: str) -> str:
    """Text for a prompt, on one line: a stored newline must not let a memory pose as a new
    header, message or instruction after the list it is given in."""
    return " ".join(text.split())


def text_hash(text: str) -> str:
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:32]


def record_id_for(namespace: str, user_id: str, kind: str, hash_value: str, *, scope: str = "/",
                  state: str = "valid", private: bool = False, source: str | None = None) -> str:
    """The id a new record of this statement gets: the same in every process, so two processes that
    store one statement for one user through a Chroma server write one record, not two (their
    reconcile queries can run before either write lands). Everything that keeps two copies of one
    statement apart when they do not race (scope, state, privacy and its source) is part of the
    key. The write pipeline gives a record a random id instead when this one is already held."""
    key = "\x1f".join((namespace, user_id, kind, scope, state, str(private), source or "", hash_value))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


class MemoryRecord(BaseModel):
    """One fact, with who it belongs to, where it came from and whether it may be served."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    hash: str
    kind: Kind = "fact"
    user_id: str
    namespace: str = "default"
    scope: str = "/"
    categories: list[str] = Field(default_factory=list)
    topic: str | None = None
    importance: float = 0.5
    author: Author = "user"
    source_kind: SourceKind = "conversation"
    session_id: str | None = None
    turn: int | None = None
    state: State = "valid"
    invalidated_by: str | None = None
    invalid_reason: str | None = None
    supersedes: str | None = None
    # The other records it replaced when it replaced several (`supersedes` names the first): a
    # crash before they are all retired is finished from these (WritePipeline.finish_retirements).
    also_supersedes: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None = None
    expires_at: datetime | None = None
    private: bool = False
    source: str | None = None
    links: list[str] = Field(default_factory=list)
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    version: int = 1

    @property
    def content(self) -> str:
        """CrewAI's name for the text."""
        return self.text

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (as_utc(now) if now else utcnow())

    def is_servable(self, now: datetime | None = None) -> bool:
        """Valid and not expired: the only records recall, profiles and tools may return."""
        return self.state == "valid" and not self.is_expired(now)


class ScoreBreakdown(BaseModel):
    """The parts a recall score is made of, each already multiplied by its weight."""

    model_config = ConfigDict(frozen=True)

    semantic: float = 0.0
    lexical: float = 0.0
    recency: float = 0.0
    importance: float = 0.0
    context: float = 0.0
    # Share of a strong match this record is linked to by a rare word they share.
    linked: float = 0.0
    linked_via: str | None = None
    linked_to: str | None = None  # the id of that match
    linked_to_text: str | None = None  # the start of its text, for the explanation
    cosine: float | None = None
    bm25: float | None = None
    matched_terms: list[str] = Field(default_factory=list)
    # Words of the record that stood in for query words of like meaning: "children for kids".
    related_words: list[str] = Field(default_factory=list)

    def explain(self) -> str:
        said = []
        if self.matched_terms:
            said.append(f"words: {', '.join(self.matched_terms[:5])}")
        if self.related_words:
            said.append(f"related: {', '.join(self.related_words[:3])}")
        parts = [
            f"semantic {self.semantic:.2f}" + (f" (cos {self.cosine:.2f})" if self.cosine is not None else ""),
            f"lexical {self.lexical:.2f}" + (f" ({'; '.join(said)})" if said else ""),
            f"recency {self.recency:.2f}",
            f"importance {self.importance:.2f}",
        ]
        if self.context:
            parts.append(f"conversation context {self.context:.2f}")
        if self.linked:
            parts.append(f"linked {self.linked:.2f} (via {self.linked_via!r} to {self.linked_to_text!r})")
        return " + ".join(parts)


class MemoryMatch(BaseModel):
    """A recalled record, its score and why it scored that."""

    model_config = ConfigDict(frozen=True)

    record: MemoryRecord
    score: float
    breakdown: ScoreBreakdown

    @property
    def explanation(self) -> str:
        return self.breakdown.explain()

    def format(self) -> str:
        """One line for a prompt: the fact, marked as a memory rather than an instruction."""
        when = self.record.created_at.date().isoformat()
        return f"- {one_line(self.record.text)} (remembered {when}, relevance {self.score:.2f})"


def record_summary(record: MemoryRecord) -> dict[str, Any]:
    """A compact dict for logs, CLI tables and tool answers."""
    return {
        "id": record.id,
        "text": record.text,
        "state": record.state,
        "scope": record.scope,
        "kind": record.kind,
        "user_id": record.user_id,
        "created_at": record.created_at.isoformat(),
    }

"""The forms of knowledge: a chunk (its text and where it came from), a search hit, an ingest's
result, and how a chunk is kept in Chroma (its id is derived from its source and text, see
knowledge_identity.py, so dedup is a lookup)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .knowledge_identity import content_digest
from .records import ScoreBreakdown, one_line
from .store import StoredRow

ChunkKind = Literal["passage", "fact", "verbatim"]


class KnowledgeChunk(BaseModel):
    """One piece of knowledge: its text and where it came from."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    hash: str
    kind: ChunkKind = "passage"
    source: str | None = None
    position: int = 0
    char_start: int | None = None
    char_end: int | None = None
    section: str | None = None
    page: int | None = None
    added_by: str = "operator"
    added_at: datetime
    ingest_id: str | None = None

    @property
    def content(self) -> str:
        return self.text

    def location(self) -> str:
        """Where the chunk sits, for people: "faq.md, Refunds > Timing, part 3"."""
        parts = [self.source or "added as text"]
        if self.page is not None:
            parts.append(f"page {self.page}")
        if self.section:
            parts.append(self.section)
        parts.append(f"part {self.position + 1}")
        return ", ".join(parts)


class KnowledgeHit(BaseModel):
    """A knowledge chunk found by `search`, its score and why it scored that."""

    model_config = ConfigDict(frozen=True)

    chunk: KnowledgeChunk
    score: float
    breakdown: ScoreBreakdown

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def explanation(self) -> str:
        return self.breakdown.explain()

    def format(self) -> str:
        """One line for a prompt: the passage, marked as reference text rather than an instruction."""
        origin = f"source: {one_line(self.chunk.source)}" if self.chunk.source else "operator knowledge"
        return f"- {one_line(self.chunk.text)} ({origin}, relevance {self.score:.2f})"


class RefusedChunk(BaseModel):
    """A piece of an add call that was not stored because it holds what looks like a secret: where
    it was and which kinds of secret, never its text. Knowledge is served to every user, so a
    credential in a document would reach them all."""

    model_config = ConfigDict(frozen=True)

    source: str | None
    position: int
    char_start: int | None = None
    char_end: int | None = None
    page: int | None = None
    section: str | None = None
    kinds: list[str]

    def location(self) -> str:
        parts = [self.source or "added as text"]
        if self.page is not None:
            parts.append(f"page {self.page}")
        if self.char_start is not None:
            parts.append(f"characters {self.char_start}-{self.char_end}")
        return ", ".join(parts)


class IngestResult(BaseModel):
    """What an add call did: the chunks it wrote, the ones that were already stored, the ones
    refused because they hold a secret (skipped; the rest of the ingest goes ahead), and the ones
    removed because a file added again no longer holds them."""

    model_config = ConfigDict(frozen=True)

    added: list[KnowledgeChunk]
    duplicates: list[KnowledgeChunk]
    refused: list[RefusedChunk] = []
    removed: list[KnowledgeChunk] = []

    @property
    def chunks(self) -> list[KnowledgeChunk]:
        return [*self.added, *self.duplicates]


def to_metadata(chunk: KnowledgeChunk) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "hash": chunk.hash, "kind": chunk.kind, "position": chunk.position,
        "added_by": chunk.added_by, "added_at": chunk.added_at.timestamp(),
    }
    optional = {"source": chunk.source, "char_start": chunk.char_start, "char_end": chunk.char_end,
                "section": chunk.section, "page": chunk.page, "ingest_id": chunk.ingest_id}
    # Chroma rejects None values on add: absent keys stand for None.
    meta.update({k: v for k, v in optional.items() if v is not None})
    return meta


def from_row(row: StoredRow) -> KnowledgeChunk:
    meta = row.metadata
    return KnowledgeChunk(
        id=row.id, text=row.document, hash=str(meta.get("hash") or content_digest(row.document)),
        kind=meta.get("kind", "passage"), source=meta.get("source"), position=int(meta.get("position", 0)),
        char_start=meta.get("char_start"), char_end=meta.get("char_end"), section=meta.get("section"),
        page=meta.get("page"), added_by=str(meta.get("added_by", "operator")),
        added_at=datetime.fromtimestamp(float(meta.get("added_at", 0.0)), tz=timezone.utc),
        ingest_id=meta.get("ingest_id"),
    )

"""Writing knowledge: from checked passages to stored chunks, all or nothing.

Order: screen and dedupe everything, embed everything, then write. The generation is bumped first,
then chunks, audit entries and the lexical index are written; if any write fails, what was written
is deleted again, so a failed ingest leaves the store as it was, and a crash in between leaves a
generation the lexical index does not match, which makes the next open re-sync it.

A document ingested as a whole file replaces what its source held: once the new version is
written, the chunks of that source it no longer contains are erased (knowledge_erasure.py), so an
edited file stops serving its old words. New chunks are written before old ones go, so a crash in
between leaves both versions (and adding the file again finishes the swap), never neither. Text
added with `add()` accumulates under its source.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .documents import Passage
from .embeddings import Embedder
from .knowledge_audit import audit_entries, new_generation, undo
from .knowledge_chunks import ChunkKind, IngestResult, KnowledgeChunk, RefusedChunk, from_row, to_metadata
from .knowledge_erasure import KnowledgeEraser
from .knowledge_identity import chunk_id, content_digest, legacy_chunk_id, normalise_source, text_identity
from .knowledge_input import Progress
from .knowledge_screen import screen
from .knowledge_search import KNOWLEDGE_OWNER
from .lexical import LexicalIndex
from .records import utcnow
from .store import StoredRow
from .store.knowledge import KnowledgeCollection

log = logging.getLogger("mnemic")

EMBED_BATCH = 128


@dataclass(frozen=True)
class Piece:
    """A passage to store, and the kinds of secret that refuse it (screened with its neighbours)."""

    passage: Passage
    kind: ChunkKind
    secrets: tuple[str, ...] = ()


def screened(passages: Sequence[Passage], kind: ChunkKind) -> list[Piece]:
    """Pieces of consecutive passages of one document, each screened with its neighbours' edges."""
    kinds = screen([p.text for p in passages])
    return [Piece(p, kind, tuple(found)) for p, found in zip(passages, kinds, strict=True)]


@dataclass(frozen=True)
class Document:
    origin: str | None
    pieces: Sequence[Piece]
    replaces: bool = False  # a whole file: the source holds this version and nothing else


class Ingest:
    def __init__(self, collection: KnowledgeCollection, lexical: LexicalIndex, eraser: KnowledgeEraser,
                 embedder: Callable[[], Embedder], count_secrets: Callable[[list[str]], None]) -> None:
        self._collection = collection
        self._lexical = lexical
        self._eraser = eraser
        self._embedder = embedder
        self._count_secrets = count_secrets

    def run(self, documents: Sequence[Document], *, actor: str, progress: Progress | None) -> IngestResult:
        """Inputs already checked; the caller holds the store's lock."""
        chunks, refused = self._chunks(documents, actor=actor)
        replacing = [d.origin for d in documents if d.replaces]
        if not chunks and not refused and not replacing:
            raise ValueError("nothing to add: the input has no text")
        held = self._held(chunks)
        fresh = [c for c in chunks if c.id not in held]
        duplicates = [held[c.id] for c in chunks if c.id in held]
        if progress is not None:
            progress(0, len(fresh))
        if fresh:
            self._write(fresh, self._embed([c.text for c in fresh], progress=progress, total=len(fresh)),
                        actor=actor)
        keep = {c.id for c in fresh} | {c.id for c in duplicates}
        removed = self._retire(replacing, keep, actor=actor)
        return IngestResult(added=fresh, duplicates=duplicates, refused=refused, removed=removed)

    def _chunks(self, documents: Sequence[Document], *, actor: str) -> tuple[list[KnowledgeChunk], list[RefusedChunk]]:
        ingest_id = uuid.uuid4().hex
        now = utcnow()
        chunks: list[KnowledgeChunk] = []
        refused: list[RefusedChunk] = []
        seen: set[str] = set()
        for document in documents:
            for position, piece in enumerate(document.pieces):
                passage = piece.passage
                if piece.secrets:
                    refused.append(RefusedChunk(
                        source=document.origin, position=position, char_start=passage.char_start,
                        char_end=passage.char_end, page=passage.page, section=passage.section,
                        kinds=list(piece.secrets)))
                    self._count_secrets(list(piece.secrets))
                    continue
                identity = chunk_id(document.origin, passage.text)
                if identity in seen:
                    continue  # the same passage twice in one source is stored once
                seen.add(identity)
                chunks.append(KnowledgeChunk(
                    id=identity, text=passage.text, hash=content_digest(passage.text), kind=piece.kind,
                    source=document.origin, position=position, char_start=passage.char_start,
                    char_end=passage.char_end, section=passage.section, page=passage.page, added_by=actor,
                    added_at=now, ingest_id=ingest_id,
                ))
        if refused:
            log.warning("knowledge ingest skipped %d chunk(s) holding a secret: %s", len(refused),
                        "; ".join(f"{r.location()} ({', '.join(r.kinds)})" for r in refused[:10]))
        return chunks, refused

    def _held(self, chunks: Sequence[KnowledgeChunk]) -> dict[str, KnowledgeChunk]:
        """The stored chunk each new chunk already is (by its id, or under the id a store written
        before source-owned chunks gave it, when source and words agree), keyed by the new id."""
        if not chunks:
            return {}
        existing = self._collection.existing_ids([c.id for c in chunks])
        held = {row.id: from_row(row) for row in self._collection.get(sorted(existing))} if existing else {}
        legacy = {c.id: legacy_chunk_id(c.text) for c in chunks if c.id not in held}
        rows = {row.id: row for row in self._collection.get(sorted(set(legacy.values())))} if legacy else {}
        by_id = {c.id: c for c in chunks}
        for new_id, old_id in legacy.items():
            row = rows.get(old_id)
            chunk = by_id[new_id]
            if row is not None and normalise_source(str(row.metadata.get("source") or "")) \
                    == normalise_source(chunk.source or "") \
                    and text_identity(row.document) == text_identity(chunk.text):
                held[new_id] = from_row(row)
        return held

    def _retire(self, sources: Sequence[str | None], keep: set[str], *, actor: str) -> list[KnowledgeChunk]:
        names = [s for s in dict.fromkeys(sources) if s is not None]
        if not names:
            return []
        stale = [from_row(r) for r in self._collection.iterate(sources=names) if r.id not in keep]
        if stale:
            self._eraser.remove(stale, actor=actor, reason="no longer in the file it came from")
        return stale

    def _embed(self, texts: list[str], *, progress: Progress | None, total: int) -> np.ndarray:
        parts = []
        for start in range(0, len(texts), EMBED_BATCH):
            parts.append(self._embedder().embed(texts[start:start + EMBED_BATCH]))
            if progress is not None:
                progress(min(start + EMBED_BATCH, total), total)
        return np.concatenate(parts, axis=0)

    def _write(self, chunks: list[KnowledgeChunk], vectors: np.ndarray, *, actor: str) -> None:
        generation = new_generation()
        entries = audit_entries("add", chunks, actor=actor, group=chunks[0].ingest_id)
        rows = [StoredRow(id=c.id, document=c.text, metadata=to_metadata(c), embedding=v)
                for c, v in zip(chunks, vectors, strict=True)]
        self._collection.set_generation(generation)
        self._collection.add(rows)  # deletes its own partial writes on failure
        try:
            self._collection.add_history(entries)
            self._lexical.upsert((c.id, self._collection.name, KNOWLEDGE_OWNER, c.text, 1) for c in chunks)
        except BaseException:
            ids = [c.id for c in chunks]
            undo("delete the chunks just written", lambda: self._collection.delete(ids))
            undo("unindex the chunks just written", lambda: self._lexical.delete(self._collection.name, ids))
            undo("drop the audit entries just written",
                 lambda: self._collection.delete_history([e["entry_id"] for e in entries]))
            raise
        self._lexical.set_watermark(self._collection.name, generation)

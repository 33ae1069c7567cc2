"""The knowledge store: what every user of an agent should be told, written only by operators.

`memory.knowledge` is a `KnowledgeStore` over the namespace's own knowledge collection. Nothing on
a conversation path (remember, remember_many, extraction) holds a reference to it, so no
conversation can write into what every user reads; reads take no user id because every caller
of the namespace sees the same knowledge.

Ingest order: parse and check everything, embed everything, then write. The generation is bumped
first, then chunks, audit entries and the lexical index are written; if any write fails, what was
written is deleted again, so a failed ingest leaves the store as it was, and a crash in between
leaves a generation the lexical index does not match, which makes the next open re-sync it.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .documents import (
    CHUNK_CHARS,
    OVERLAP_CHARS,
    SUPPORTED_SUFFIXES,
    DocumentError,
    Passage,
    chunk_text,
    read_document,
)
from .embeddings import Embedder
from .gate import OpenGate
from .history import HistoryEntry
from .knowledge_audit import audit_entries, new_generation, undo
from .knowledge_chunks import (
    ChunkKind,
    IngestResult,
    KnowledgeChunk,
    KnowledgeHit,
    RefusedChunk,
    chunk_id,
    from_row,
    to_metadata,
)
from .knowledge_input import (
    Progress,
    check_actor,
    check_chunk_id,
    check_path,
    check_progress,
    check_source,
    check_sources,
    distil_with_llm,
)
from .knowledge_search import KNOWLEDGE_OWNER, KnowledgeRanker
from .lexical import LexicalIndex
from .ranking import RecallWeights
from .records import text_hash, utcnow
from .safety import contains_secret, find_secrets
from .scrub import Scrubber
from .store import StoredRow
from .store.knowledge import KnowledgeCollection
from .validation import check_clean, check_limit, check_min_score, check_text

log = logging.getLogger("mnemic")


EMBED_BATCH = 128
# Text given to add() (not verbatim) is chunked; a whole book fits, a runaway input does not.
MAX_KNOWLEDGE_TEXT_CHARS = 5_000_000
SERVER_SYNC_INTERVAL_S = 2.0


class KnowledgeStore:
    """The operator API of a namespace's knowledge: add, add_file, search, list, delete, clear.

    Obtain it as `memory.knowledge`; it shares the Memory's Chroma client, embedder, LLM, weights
    and lexical index, and closes with it. `policy(**context)` answers the policy in force (see
    `enabled_for_agents`); `single_writer` says no other process writes the namespace.
    """

    def __init__(self, *, namespace: str, client: Any, lexical: LexicalIndex, gate: OpenGate,
                 embedder: Callable[[], Embedder], llm: Callable[[], Any], weights: Callable[[], RecallWeights],
                 policy: Callable[..., Any], max_text_chars: int, single_writer: bool,
                 refuse_secrets: Callable[..., None], count_secrets: Callable[[list[str]], None],
                 chunk_chars: int = CHUNK_CHARS, overlap_chars: int = OVERLAP_CHARS,
                 scrubber: Scrubber | None = None) -> None:
        self.namespace = namespace
        self.chunk_chars = chunk_chars
        self.overlap_chars = overlap_chars
        self._collection = KnowledgeCollection(client, namespace)
        self._lexical = lexical
        self._gate = gate
        self._embedder = embedder
        self._llm = llm
        self._weights = weights
        self._policy = policy
        self._max_text_chars = max_text_chars
        self._single_writer = single_writer
        self._scrubber = scrubber
        # Fields named by the caller (source, added_by, reason) raise SecretRefusedError; chunks
        # holding a secret are skipped, reported in IngestResult.refused and counted in stats.
        self._refuse_secrets = refuse_secrets
        self._count_secrets = count_secrets
        self._ranker = KnowledgeRanker(self._collection, lexical, embedder, weights)
        self._lock = threading.RLock()
        self._last_sync = 0.0
        self.repair()

    def __repr__(self) -> str:
        return f"KnowledgeStore(namespace={self.namespace!r}, collection={self._collection.name!r})"

    @property
    def collection_name(self) -> str:
        return self._collection.name

    # -- writing ----------------------------------------------------------------------------------

    def add(
        self,
        text: str,
        *,
        verbatim: bool = False,
        source: str | None = None,
        added_by: str = "operator",
        progress: Progress | None = None,
    ) -> IngestResult:
        """Add knowledge every user of the namespace will be able to find.

        By default the text is distilled into facts: by the Memory's LLM when one is configured,
        otherwise by chunking it into standalone passages. `verbatim=True` stores it as one fact,
        exactly as written. Re-adding text already stored adds nothing.
        """
        self._gate.check()
        if not isinstance(verbatim, bool):
            raise TypeError("verbatim must be True or False")
        origin = check_source(source)
        actor = check_actor(added_by)
        callback = check_progress(progress)
        self._refuse_secrets("this knowledge.add()", source=origin)
        if verbatim:
            clean = check_text(text, max_chars=self._max_text_chars)
            pieces: list[tuple[Passage, ChunkKind]] = [(Passage(clean, 0, len(clean)), "verbatim")]
        else:
            if not isinstance(text, str):
                raise TypeError(f"text must be a string, got {type(text).__name__}")
            if not text.strip():
                raise ValueError("text is empty: give the knowledge to add")
            if len(text) > MAX_KNOWLEDGE_TEXT_CHARS:
                raise ValueError(f"text is {len(text)} characters; the limit is {MAX_KNOWLEDGE_TEXT_CHARS}. "
                                 "Add a long document as a file (add_file) or in parts.")
            check_clean(text, name="text")
            pieces = self._distil(text.replace("\r\n", "\n"))
        return self._ingest([(origin, pieces)], actor=actor, progress=callback)

    def add_file(
        self,
        path: str | Path,
        *,
        source: str | None = None,
        added_by: str = "operator",
        progress: Progress | None = None,
    ) -> IngestResult:
        """Add a .txt, .md, .json, .csv or .pdf file, chunked with overlap; each chunk keeps the
        file as its source (or `source`) and its position in the file."""
        self._gate.check()
        file = check_path(path)
        origin = check_source(source) or str(path)
        actor = check_actor(added_by)
        callback = check_progress(progress)
        self._refuse_secrets("this knowledge.add_file()", source=origin)
        passages = read_document(file, size=self.chunk_chars, overlap=self.overlap_chars)
        return self._ingest([(origin, [(p, "passage") for p in passages])], actor=actor, progress=callback)

    def add_files(
        self,
        paths: Iterable[str | Path],
        *,
        added_by: str = "operator",
        progress: Progress | None = None,
    ) -> IngestResult:
        """Add several files in one all-or-nothing ingest. A directory adds every supported file
        under it (others are skipped); a file named explicitly must be supported."""
        self._gate.check()
        if isinstance(paths, (str, Path)):
            paths = [paths]
        actor = check_actor(added_by)
        callback = check_progress(progress)
        files: list[Path] = []
        for item in paths:
            target = check_path(item)
            if target.is_dir():
                files.extend(sorted(f for f in target.rglob("*")
                                    if f.is_file() and f.suffix.lower() in SUPPORTED_SUFFIXES))
            else:
                files.append(target)
        if not files:
            raise DocumentError(
                f"no files to add (supported types: {', '.join(SUPPORTED_SUFFIXES)})")
        self._refuse_secrets("this knowledge.add_files()", source=[str(f) for f in files])
        documents: list[tuple[str | None, list[tuple[Passage, ChunkKind]]]] = []
        for file in dict.fromkeys(files):
            passages = read_document(file, size=self.chunk_chars, overlap=self.overlap_chars)
            pieces: list[tuple[Passage, ChunkKind]] = [(p, "passage") for p in passages]
            documents.append((str(file), pieces))
        return self._ingest(documents, actor=actor, progress=callback)

    def _distil(self, text: str) -> list[tuple[Passage, ChunkKind]]:
        passages = chunk_text(text, size=self.chunk_chars, overlap=self.overlap_chars)
        if not passages:
            raise ValueError("text is empty: give the knowledge to add")
        llm = self._llm()
        if llm is None:
            return [(p, "passage") for p in passages]
        out: list[tuple[Passage, ChunkKind]] = []
        for passage in passages:
            if contains_secret(passage.text):
                out.append((passage, "passage"))  # never sent to a provider; _ingest refuses it
                continue
            facts = distil_with_llm(llm, passage.text)
            if not facts:
                # The model gave nothing usable: the operator's words are kept as written.
                out.append((passage, "passage"))
                continue
            out.extend((Passage(fact, passage.char_start, passage.char_end, passage.section, passage.page),
                        "fact") for fact in facts)
        return out

    def _ingest(self, documents: Sequence[tuple[str | None, Sequence[tuple[Passage, ChunkKind]]]], *,
                actor: str, progress: Progress | None) -> IngestResult:
        ingest_id = uuid.uuid4().hex
        now = utcnow()
        chunks: list[KnowledgeChunk] = []
        refused: list[RefusedChunk] = []
        seen: set[str] = set()
        for origin, pieces in documents:
            for position, (passage, kind) in enumerate(pieces):
                secrets = find_secrets(passage.text)
                if secrets:
                    refused.append(RefusedChunk(
                        source=origin, position=position, char_start=passage.char_start, char_end=passage.char_end,
                        page=passage.page, section=passage.section, kinds=sorted({h.kind for h in secrets})))
                    self._count_secrets([h.kind for h in secrets])
                    continue
                digest = text_hash(passage.text)
                if digest in seen:
                    continue  # the same passage twice in one ingest is stored once
                seen.add(digest)
                chunks.append(KnowledgeChunk(
                    id=chunk_id(digest), text=passage.text, hash=digest, kind=kind, source=origin,
                    position=position, char_start=passage.char_start, char_end=passage.char_end,
                    section=passage.section, page=passage.page, added_by=actor, added_at=now,
                    ingest_id=ingest_id,
                ))
        if refused:
            log.warning("knowledge ingest skipped %d chunk(s) holding a secret: %s", len(refused),
                        "; ".join(f"{r.location()} ({', '.join(r.kinds)})" for r in refused[:10]))
        if not chunks:
            if refused:
                return IngestResult(added=[], duplicates=[], refused=refused)
            raise ValueError("nothing to add: the input has no text")
        with self._lock:
            existing = self._collection.existing_ids([c.id for c in chunks])
            fresh = [c for c in chunks if c.id not in existing]
            duplicates = [from_row(r) for r in self._collection.get(sorted(existing))] if existing else []
            total = len(fresh)
            if progress is not None:
                progress(0, total)
            if not fresh:
                return IngestResult(added=[], duplicates=duplicates, refused=refused)
            vectors = self._embed([c.text for c in fresh], progress=progress, total=total)
            self._write(fresh, vectors, actor=actor)
            return IngestResult(added=fresh, duplicates=duplicates, refused=refused)

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

    # -- reading ----------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 5,
        *,
        source: str | Sequence[str] | None = None,
        min_score: float = 0.0,
    ) -> list[KnowledgeHit]:
        """The chunks most relevant to `query`, best first, each explained. Same hybrid ranking
        as memory recall (dense + FTS5 word matches scored by coverage, fused with the Memory's weights).
        `source` keeps only chunks from that source (or those sources)."""
        self._gate.check()
        query_text = check_text(query, name="query", max_chars=self._max_text_chars)
        limit = check_limit(limit)
        sources = check_sources(source)
        threshold = check_min_score(min_score)
        self._maybe_sync()
        return self._ranker.search(query_text, limit=limit, sources=sources, min_score=threshold)

    def get(self, chunk_id: str) -> KnowledgeChunk:
        self._gate.check()
        rows = self._collection.get([check_chunk_id(chunk_id)])
        if not rows:
            raise KeyError(f"no knowledge with id {chunk_id!r} in namespace {self.namespace!r}")
        return from_row(rows[0])

    def list(self, *, source: str | None = None, limit: int = 100, offset: int = 0) -> list[KnowledgeChunk]:
        """Chunks in the order they were added (each document in its own order)."""
        self._gate.check()
        limit = check_limit(limit, maximum=100_000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        if source is not None and not isinstance(source, str):
            raise TypeError(f"source must be a string (a source as `sources()` lists it), got {type(source).__name__}")
        chunks = [from_row(r) for r in self._collection.iterate()]
        if source is not None:
            chunks = [c for c in chunks if c.source == source]
        chunks.sort(key=lambda c: (c.added_at, c.ingest_id or "", c.source or "", c.position, c.id))
        return chunks[offset:offset + limit]

    def sources(self) -> dict[str, int]:
        """Each source and how many chunks it holds ("" for text added without a source)."""
        self._gate.check()
        counts: dict[str, int] = {}
        for row in self._collection.iterate(documents=False):
            key = str(row.metadata.get("source", ""))
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))

    def count(self) -> int:
        self._gate.check()
        return self._collection.count()

    def history(self, chunk_id: str) -> builtins.list[HistoryEntry]:
        """Who added (and removed) a chunk, and when; kept after the chunk is deleted."""
        self._gate.check()
        raw = self._collection.history_for(check_chunk_id(chunk_id))
        if not raw:
            raise KeyError(f"no knowledge with id {chunk_id!r} has any history in namespace {self.namespace!r}")
        # An entry may stand for many chunks; seen from one chunk, it is that chunk's entry.
        return [HistoryEntry.model_validate({**item, "record_id": chunk_id}) for item in raw]

    # -- removing ---------------------------------------------------------------------------------

    def delete(self, chunk_id: str, *, actor: str = "operator", reason: str | None = None) -> KnowledgeChunk:
        """Remove one chunk for every user; returns what was removed. KeyError if unknown."""
        self._gate.check()
        self._refuse_secrets("this knowledge.delete()", actor=actor, reason=reason)
        with self._lock:
            chunk = self.get(chunk_id)
            self._remove([chunk], actor=check_actor(actor), reason=reason)
            return chunk

    def delete_source(self, source: str, *, actor: str = "operator", reason: str | None = None) -> int:
        """Remove every chunk of one source (before re-adding a changed file); returns how many."""
        self._gate.check()
        if not isinstance(source, str) or not source:
            raise ValueError("source must be a non-empty string, as shown by sources()")
        self._refuse_secrets("this knowledge.delete_source()", actor=actor, reason=reason)
        with self._lock:
            doomed = [c for c in (from_row(r) for r in self._collection.iterate()) if c.source == source]
            if not doomed:
                raise KeyError(f"no knowledge from source {source!r} in namespace {self.namespace!r}")
            self._remove(doomed, actor=check_actor(actor), reason=reason)
            return len(doomed)

    def clear(self, *, confirm: bool = False, actor: str = "operator") -> int:
        """Remove all knowledge of the namespace; returns how many chunks were removed.

        Every user of the namespace loses it, so the call must say so: `clear(confirm=True)`.
        """
        self._gate.check()
        if confirm is not True:
            raise ValueError(
                f"clear() removes all knowledge of namespace {self.namespace!r} for every user; "
                "call clear(confirm=True) to do it"
            )
        who = check_actor(actor)
        with self._lock:
            chunks = [from_row(r) for r in self._collection.iterate()]
            self._collection.set_generation(new_generation())
            if chunks:
                self._collection.add_history(audit_entries("delete", chunks, actor=who, reason="cleared",
                                                              group="clear"))
            self._collection.clear()
            self._lexical.drop_collection(self._collection.name)
            generation = self._collection.generation()
            if generation is not None:
                self._lexical.set_watermark(self._collection.name, generation)
            self._erase_texts(None, dropped=True)
            return len(chunks)

    def _erase_texts(self, chunk_ids: Sequence[str] | None, *, dropped: bool = False) -> None:
        """Erasure that erases: the removed chunks' texts leave the audit trail (None: every
        entry's), and the store's files (see scrub.py)."""
        redacted = self._collection.redact_history(chunk_ids)
        if self._scrubber is None:
            return
        chunks, audit = self._collection.handles()
        if chunk_ids and not dropped:
            self._scrubber.rebuild_if_logged(chunks, self._collection.name, chunk_ids)
        self._scrubber.rebuild_if_logged(audit, self._collection.history_name, redacted)
        self._collection.forget_handles()
        self._scrubber.finish()

    def _remove(self, chunks: builtins.list[KnowledgeChunk], *, actor: str, reason: str | None) -> None:
        generation = new_generation()
        entries = audit_entries("delete", chunks, actor=actor, reason=reason)
        self._collection.set_generation(generation)
        self._collection.add_history(entries)
        try:
            self._collection.delete([c.id for c in chunks])
        except BaseException:
            undo("drop the audit entries of a failed delete",
                  lambda: self._collection.delete_history([e["entry_id"] for e in entries]))
            raise
        self._lexical.delete(self._collection.name, (c.id for c in chunks))
        self._lexical.set_watermark(self._collection.name, generation)
        self._erase_texts([c.id for c in chunks])

    # -- policy -----------------------------------------------------------------------------------

    def enabled_for_agents(self, **context: Any) -> bool:
        """Whether agents are offered knowledge search: the policy's `knowledge` switch, off by
        default. `context` (e.g. user_id) is passed on to the policy getter."""
        try:
            policy = self._policy(**context)
        except Exception as exc:
            log.warning("could not read the memory policy (%s); knowledge search stays off", exc)
            return False
        value = policy.get("knowledge") if isinstance(policy, Mapping) else getattr(policy, "knowledge", None)
        return value is True

    # -- repair -----------------------------------------------------------------------------------

    def repair(self) -> int:
        """Bring the lexical index in line with the knowledge collection; returns entries changed."""
        with self._lock:
            generation = self._collection.generation()
            name = self._collection.name
            if generation is not None and self._lexical.watermark(name) == generation:
                return 0
            indexed = self._lexical.versions(name)
            present = {r.id for r in self._collection.iterate(documents=False)}
            stale = [rid for rid in indexed if rid not in present]
            missing = [rid for rid in present if rid not in indexed]
            if stale:
                self._lexical.delete(name, stale)
            if missing:
                rows = self._collection.get(missing)
                self._lexical.upsert((r.id, name, KNOWLEDGE_OWNER, r.document, 1) for r in rows)
            if generation is not None:
                self._lexical.set_watermark(name, generation)
            return len(stale) + len(missing)

    def _maybe_sync(self) -> None:
        if self._single_writer:
            return  # this process is the only writer: the index is current
        now = time.monotonic()
        if now - self._last_sync >= SERVER_SYNC_INTERVAL_S:
            self._last_sync = now
            self.repair()


__all__ = [
    "KNOWLEDGE_OWNER",
    "IngestResult",
    "KnowledgeChunk",
    "KnowledgeHit",
    "KnowledgeStore",
    "RefusedChunk",
]

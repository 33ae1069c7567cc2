"""The knowledge store: what every user of an agent should be told, written only by operators.

`memory.knowledge` is a `KnowledgeStore` over the namespace's own knowledge collection. Nothing on
a conversation path (remember, remember_many, extraction) holds a reference to it, so no
conversation can write into what every user reads; reads take no user id because every caller
of the namespace sees the same knowledge.

This module checks an operator's calls and hands the work to its parts: writing
(knowledge_ingest.py), removing (knowledge_erasure.py), ranking (knowledge_search.py).
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

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
from .knowledge_chunks import (
    IngestResult,
    KnowledgeChunk,
    KnowledgeHit,
    RefusedChunk,
    from_row,
)
from .knowledge_erasure import KnowledgeEraser
from .knowledge_identity import normalise_source, source_spellings
from .knowledge_ingest import Document, Ingest, Piece, screened
from .knowledge_input import (
    Progress,
    check_actor,
    check_chunk_id,
    check_file_source,
    check_path,
    check_progress,
    check_source,
    check_sources,
    distil_with_llm,
)
from .knowledge_search import KNOWLEDGE_OWNER, KnowledgeRanker
from .lexical import LexicalIndex
from .ranking import RecallWeights
from .scrub import Scrubber
from .store import StoredRow
from .store.knowledge import KnowledgeCollection
from .validation import check_clean, check_flag, check_items, check_limit, check_min_score, check_text, scrub

log = logging.getLogger("mnemic")

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
        # Fields named by the caller (source, added_by, reason) raise SecretRefusedError; chunks
        # holding a secret are skipped, reported in IngestResult.refused and counted in stats.
        self._refuse_secrets = refuse_secrets
        self._eraser = KnowledgeEraser(self._collection, lexical, scrubber)
        self._ingest = Ingest(self._collection, lexical, self._eraser, embedder, count_secrets)
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
        exactly as written. Text accumulates under its source; re-adding text the source already
        holds (the same words, whitespace aside) adds nothing.
        """
        self._gate.check()
        check_flag(verbatim, name="verbatim")
        origin = check_source(source)
        actor = check_actor(added_by)
        callback = check_progress(progress)
        self._refuse_secrets("this knowledge.add()", source=origin)
        if verbatim:
            clean = check_text(text, max_chars=self._max_text_chars)
            pieces = screened([Passage(clean, 0, len(clean))], "verbatim")
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
        return self._run([Document(origin, pieces)], actor=actor, progress=callback)

    def add_file(
        self,
        path: str | Path,
        *,
        source: str | None = None,
        added_by: str = "operator",
        progress: Progress | None = None,
    ) -> IngestResult:
        """Add a .txt, .md, .json, .csv or .pdf file, chunked with overlap; each chunk keeps the
        file as its source (or `source`) and its position in the file.

        The source then holds what the file says now: adding a file again after editing it keeps
        the passages it still holds, adds the new ones and removes (erases, as `delete` does) the
        source's chunks the file no longer holds, listed in the result's `removed`. Text added with
        `add()` under the same source counts as the source's and is replaced too."""
        self._gate.check()
        file = check_path(path)
        origin = check_source(source) if source is not None else check_file_source(str(path))
        actor = check_actor(added_by)
        callback = check_progress(progress)
        self._refuse_secrets("this knowledge.add_file()", source=origin)
        passages = read_document(file, size=self.chunk_chars, overlap=self.overlap_chars)
        return self._run([Document(origin, screened(passages, "passage"), replaces=True)], actor=actor,
                         progress=callback)

    def add_files(
        self,
        paths: Iterable[str | Path],
        *,
        added_by: str = "operator",
        progress: Progress | None = None,
    ) -> IngestResult:
        """Add several files in one all-or-nothing ingest. A directory adds every supported file
        under it (others are skipped); a file named explicitly must be supported. Each file is
        its own source and replaces what that source held, as in `add_file`."""
        self._gate.check()
        paths = [paths] if isinstance(paths, (str, Path)) else check_items(
            paths, name="paths", what="a file or directory path or a list of them", example="add_files(['docs/'])")
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
        documents: list[Document] = []
        for file in dict.fromkeys(files):
            passages = read_document(file, size=self.chunk_chars, overlap=self.overlap_chars)
            documents.append(Document(check_file_source(str(file)), screened(passages, "passage"), replaces=True))
        return self._run(documents, actor=actor, progress=callback)

    def _distil(self, text: str) -> list[Piece]:
        passages = screened(chunk_text(text, size=self.chunk_chars, overlap=self.overlap_chars), "passage")
        if not passages:
            raise ValueError("text is empty: give the knowledge to add")
        llm = self._llm()
        if llm is None:
            return passages
        out: list[Piece] = []
        for piece in passages:
            passage = piece.passage
            if piece.secrets:
                out.append(piece)  # never sent to a provider; the ingest refuses it
                continue
            facts = distil_with_llm(llm, passage.text)
            if not facts:
                # The model gave nothing usable: the operator's words are kept as written.
                out.append(piece)
                continue
            # A model's words are made storable rather than refused (as for extraction), and screened.
            out.extend(screened([Passage(scrub(fact), passage.char_start, passage.char_end, passage.section,
                                         passage.page) for fact in facts], "fact"))
        return out

    def _run(self, documents: list[Document], *, actor: str, progress: Progress | None) -> IngestResult:
        with self._lock:
            self._finish_earlier_erasures()
            return self._ingest.run(documents, actor=actor, progress=progress)

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
        `source` keeps only chunks from that source (or those sources), found among that source's
        chunks alone however many others rank higher. A passage stored under several sources
        is returned once."""
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
        chunks = [from_row(r) for r in (self._collection.iterate(sources=None) if source is None
                                        else self._rows_of_source(source))]
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
            self._finish_earlier_erasures()
            chunk = self.get(chunk_id)
            self._eraser.remove([chunk], actor=check_actor(actor), reason=reason)
            return chunk

    def delete_source(self, source: str, *, actor: str = "operator", reason: str | None = None) -> int:
        """Remove every chunk of one source (named as `sources()` lists it, or as it was given
        when added); returns how many. Other sources holding the same passage keep theirs."""
        self._gate.check()
        if not isinstance(source, str) or not source.strip():
            raise ValueError("source must be a non-empty string, as shown by sources()")
        self._refuse_secrets("this knowledge.delete_source()", actor=actor, reason=reason)
        with self._lock:
            self._finish_earlier_erasures()
            doomed = [from_row(r) for r in self._rows_of_source(source)]
            if not doomed:
                raise KeyError(f"no knowledge from source {source.strip()!r} in namespace {self.namespace!r}")
            self._eraser.remove(doomed, actor=check_actor(actor), reason=reason)
            return len(doomed)

    def _finish_earlier_erasures(self) -> None:
        # A removal that failed part-way (its scrub hit a full disk) keeps its mark, and finishing
        # it later deletes the ids (or, for clear(), everything) it names: finished before anything
        # new is written, it can never reach knowledge added after it.
        self._eraser.finish_unfinished()

    def _rows_of_source(self, source: str) -> builtins.list[StoredRow]:
        """The chunks of the stored source a name stands for: the name exactly as given when such a
        source exists, else its other Unicode forms (knowledge_identity.source_spellings)."""
        for spelling in source_spellings(source):
            rows = list(self._collection.iterate(sources=[spelling]))
            if rows:
                return rows
        return []

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
            self._finish_earlier_erasures()
            chunks = [from_row(r) for r in self._collection.iterate()]
            self._eraser.clear(chunks, actor=who)
            return len(chunks)

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
        """Finish any removal a crash interrupted (knowledge_erasure.py), bring stored source names
        to the form every path compares, and the lexical index in line with the collection.
        Runs whenever the store is opened; returns how many chunks and index entries it changed."""
        with self._lock:
            finished = self._eraser.finish_unfinished()
            self._normalise_sources()
            return finished + self._sync_lexical()

    def _normalise_sources(self) -> None:
        """Once per store: source names written before they were normalised (NFC, stripped)."""
        if self._collection.layout() >= 2:
            return
        changes = {}
        for row in self._collection.iterate(documents=False):
            stored = row.metadata.get("source")
            if isinstance(stored, str) and normalise_source(stored) != stored:
                changes[row.id] = normalise_source(stored)
        self._collection.set_sources(changes)
        self._collection.set_layout(2)

    def _sync_lexical(self) -> int:
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
            self._sync_lexical()


__all__ = [
    "KNOWLEDGE_OWNER",
    "IngestResult",
    "KnowledgeChunk",
    "KnowledgeHit",
    "KnowledgeStore",
    "RefusedChunk",
]

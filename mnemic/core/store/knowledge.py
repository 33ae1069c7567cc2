"""The Chroma side of the knowledge store: one collection per namespace, `mnemic-<ns>-knowledge`.

Knowledge is what every user of an agent reads, so it lives apart from the per-user memory
collections (`mnemic-<ns>-m-<owner>`): nothing that writes memory holds a handle to this
collection, and memory's `users()` and `drop_namespace()` never see it (its name does not carry
the memory infix), so `Memory.reset()` leaves knowledge alone.

`mnemic-<ns>-knowledge-audit` is the knowledge audit trail (who added or removed what, when),
kept apart from memory's history so `Memory.reset()` does not erase it either. It also holds the
store's generation: a value every mutation changes, so a process can tell cheaply whether its
lexical index is still current.

Chunk ids are derived from the chunk's source and text, so deduplication is a lookup by id. A
search kept to some sources is a `where` on `source` (its cost grows with the chunks it matches).

An erasure is marked in its audit entries (`erasing`) before anything is removed and unmarked once
the chunks, their texts in the trail and their bytes in the store's files are gone, so an erasure a
crash interrupted is found and finished (`unfinished_erasures`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .chroma import StoredRow, _rows, write_rows
from .naming import claim, namespace_slug
from .retry import retrying

log = logging.getLogger("mnemic")

KNOWLEDGE_COLLECTION_SUFFIX = "-knowledge"
# Not "-knowledge-history": namespace "x-knowledge" already owns "mnemic-x-knowledge-history" (its
# memory history). No other namespace's collection can end in "-knowledge-audit".
KNOWLEDGE_HISTORY_SUFFIX = "-knowledge-audit"
_GENERATION_ID = "__generation__"
# Which layout the chunks' metadata follows: 2 = source names normalised (knowledge_identity.py).
_LAYOUT_ID = "__layout__"
_PLACEHOLDER_VECTOR = [1.0]
# Chroma fails to compact a metadata list of ~8000 strings; 1000 is far from that and still
# makes one entry per ingest of a typical document.
HISTORY_IDS_PER_ENTRY = 1000
_DEFAULT_BATCH = 1000
# The id lookups of dedup and deletes need no vectors; chunks of this size keep each call small.
_ID_BATCH = 2000


class KnowledgeCollection:
    """add / get / query / delete / list / clear on a namespace's knowledge collection."""

    def __init__(self, client: Any, namespace: str) -> None:
        self.client = retrying(client)
        self.namespace = namespace
        self.name = f"mnemic-{namespace_slug(namespace)}{KNOWLEDGE_COLLECTION_SUFFIX}"
        self.history_name = f"mnemic-{namespace_slug(namespace)}{KNOWLEDGE_HISTORY_SUFFIX}"
        self._lock = threading.RLock()
        self._collection: Any | None = None
        self._history: Any | None = None

    def _handle(self, *, create: bool) -> Any | None:
        with self._lock:
            if self._collection is not None:
                return self._collection
            if create:
                found = self.client.get_or_create_collection(
                    self.name,
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"mnemic": "knowledge", "namespace": self.namespace},
                )
            else:
                try:
                    found = self.client.get_collection(self.name, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
                    return None
            # Cached only once it is known to be this namespace's.
            self._collection = claim(found, self.namespace)
            return self._collection

    def batch_size(self) -> int:
        try:
            return max(1, min(int(self.client.get_max_batch_size()), 5000))
        except Exception:
            return _DEFAULT_BATCH

    # -- writes ---------------------------------------------------------------------------------

    def add(self, rows: Sequence[StoredRow]) -> None:
        """Write rows in batches. If a batch fails, the batches already written are deleted again
        before the error propagates, so a failed ingest leaves the collection as it was."""
        if not rows:
            return
        collection = self._handle(create=True)
        assert collection is not None
        step = self.batch_size()
        written: list[str] = []
        try:
            write_rows(collection.add, rows, step, written)
        except BaseException:
            # The failing batch may have landed in part: delete its ids too (deleting an id
            # that is not there is a no-op in Chroma).
            failed = [r.id for r in rows[len(written):len(written) + step]]
            try:
                self.delete([*written, *failed])
            except Exception as exc:  # the original error is the one to report
                log.error("could not delete a failed knowledge write (%d chunks): %s", len(written), exc)
            raise

    def delete(self, ids: Sequence[str]) -> None:
        collection = self._handle(create=False)
        if collection is None or not ids:
            return
        for start in range(0, len(ids), _ID_BATCH):
            collection.delete(ids=list(ids[start:start + _ID_BATCH]))

    def clear(self) -> None:
        """Drop the whole collection (it is recreated on the next add)."""
        with self._lock:
            self._collection = None
            try:
                self.client.delete_collection(self.name)
            except Exception:  # already gone
                return

    # -- reads ----------------------------------------------------------------------------------

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        collection = self._handle(create=False)
        if collection is None or not ids:
            return set()
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _ID_BATCH):
            result = collection.get(ids=unique[start:start + _ID_BATCH], include=[])
            found.update(result.get("ids") or [])
        return found

    def get(self, ids: Sequence[str], *, embeddings: bool = False) -> list[StoredRow]:
        collection = self._handle(create=False)
        if collection is None or not ids:
            return []
        include = ["documents", "metadatas"] + (["embeddings"] if embeddings else [])
        rows: list[StoredRow] = []
        for start in range(0, len(ids), _ID_BATCH):
            rows.extend(_rows(collection.get(ids=list(ids[start:start + _ID_BATCH]), include=include)))
        return rows

    def iterate(self, *, page: int = 1000, documents: bool = True,
                sources: Sequence[str] | None = None) -> Iterator[StoredRow]:
        """Every chunk (of `sources` only, when given)."""
        collection = self._handle(create=False)
        if collection is None:
            return
        include = ["metadatas"] + (["documents"] if documents else [])
        where = _source_filter(sources)
        offset = 0
        while True:
            rows = _rows(collection.get(limit=page, offset=offset, include=include, where=where))
            yield from rows
            if len(rows) < page:
                return
            offset += page

    def query(self, vector: np.ndarray, *, n_results: int,
              sources: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """(id, cosine distance) of the nearest chunks (of `sources` only, when given). Only ids and
        distances: documents are fetched for the few that win fusion."""
        collection = self._handle(create=False)
        if collection is None:
            return []
        # Chroma returns fewer than n_results when the collection is smaller, so no count() first.
        result = collection.query(query_embeddings=[vector], n_results=n_results, include=["distances"],
                                  where=_source_filter(sources))
        ids = (result.get("ids") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        return [(rid, float(d)) for rid, d in zip(ids, distances, strict=True)]

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        collection = self._handle(create=False)
        if collection is None or not ids:
            return {}
        result = collection.get(ids=list(ids), include=["embeddings"])
        vectors = result.get("embeddings")
        if vectors is None:
            return {}
        return {rid: np.asarray(v, dtype=np.float32) for rid, v in zip(result.get("ids") or [], vectors,
                                                                       strict=True)}

    def count(self) -> int:
        collection = self._handle(create=False)
        return 0 if collection is None else int(collection.count())

    # -- audit trail and generation ---------------------------------------------------------------

    def has_audit(self) -> bool:
        """Whether knowledge was ever written in this namespace (its audit trail exists)."""
        if self._history is not None:
            return True
        try:
            self.client.get_collection(self.history_name, embedding_function=None)
        except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
            return False
        return True

    def _history_handle(self) -> Any:
        with self._lock:
            if self._history is None:
                self._history = claim(self.client.get_or_create_collection(
                    self.history_name, embedding_function=None,
                    metadata={"mnemic": "knowledge-audit", "namespace": self.namespace},
                ), self.namespace)
            return self._history

    def add_history(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Entries carry `record_ids` (at most HISTORY_IDS_PER_ENTRY): one entry can stand for a
        whole ingest, which keeps the trail from doubling the cost of a write."""
        if not entries:
            return
        history = self._history_handle()
        step = self.batch_size()
        for start in range(0, len(entries), step):
            chunk = entries[start:start + step]
            history.add(
                ids=[e["entry_id"] for e in chunk],
                documents=[json.dumps({k: v for k, v in e.items() if k not in ("record_ids", "erasing")},
                                      default=str)
                           for e in chunk],
                metadatas=[{"record_ids": list(e["record_ids"]), "action": e["action"], "at": float(e["at_ts"]),
                            **({"erasing": e["erasing"]} if e.get("erasing") else {})}
                           for e in chunk],
                embeddings=[_PLACEHOLDER_VECTOR] * len(chunk),
            )

    def unfinished_erasures(self) -> list[tuple[str, str, list[str]]]:
        """(entry id, "chunks" or "all", chunk ids) of every erasure begun and not finished."""
        result = self._history_handle().get(where={"erasing": {"$in": ["chunks", "all"]}}, include=["metadatas"])
        return [(entry_id, str(meta["erasing"]), list(meta.get("record_ids") or []))
                for entry_id, meta in zip(result.get("ids") or [], result.get("metadatas") or [], strict=False)
                if meta]

    def erasure_finished(self, entry_ids: Sequence[str]) -> None:
        history = self._history_handle()
        for start in range(0, len(entry_ids), _ID_BATCH):
            part = list(entry_ids[start:start + _ID_BATCH])
            history.update(ids=part, metadatas=[{"erasing": None} for _ in part])

    def delete_history(self, entry_ids: Sequence[str]) -> None:
        history = self._history_handle()
        for start in range(0, len(entry_ids), _ID_BATCH):
            history.delete(ids=list(entry_ids[start:start + _ID_BATCH]))

    def redact_history(self, record_ids: Sequence[str] | None) -> list[str]:
        """Rewrite the audit entries that mention `record_ids` (None: every entry) without the
        texts they kept (a single chunk's add keeps its text); returns the ids of the entries that
        hold or held a text, redacted now or by an earlier, interrupted erasure."""
        history = self._history_handle()
        if record_ids is None:
            found = [history.get(where={"action": {"$in": ["add", "delete"]}}, include=["documents", "metadatas"])]
        else:
            found = [history.get(where={"record_ids": {"$contains": rid}}, include=["documents", "metadatas"])
                     for rid in dict.fromkeys(record_ids)]
        rewritten: dict[str, tuple[str, dict[str, Any]]] = {}
        held: list[str] = []
        for result in found:
            for entry_id, document, metadata in zip(result.get("ids") or [], result.get("documents") or [],
                                                    result.get("metadatas") or [], strict=False):
                entry = json.loads(document)
                if entry.get("action") == "add" and len((metadata or {}).get("record_ids") or []) == 1:
                    held.append(entry_id)
                if entry.get("before") is None and entry.get("after") is None:
                    continue
                entry["before"] = entry["after"] = None
                rewritten[entry_id] = (json.dumps(entry, default=str), dict(metadata or {}))
        if rewritten:
            ids = list(rewritten)
            history.upsert(ids=ids, documents=[rewritten[i][0] for i in ids],
                           metadatas=[rewritten[i][1] for i in ids], embeddings=[_PLACEHOLDER_VECTOR] * len(ids))
        return list(dict.fromkeys([*held, *rewritten]))

    def handles(self) -> tuple[Any | None, Any]:
        """The chunk collection (None when absent) and the audit collection, for a rebuild."""
        return self._handle(create=False), self._history_handle()

    def forget_handles(self) -> None:
        """Drop the cached handles (the collections were rebuilt under their names)."""
        with self._lock:
            self._collection = None
            self._history = None

    def history_for(self, record_id: str) -> list[dict[str, Any]]:
        result = self._history_handle().get(where={"record_ids": {"$contains": record_id}},
                                            include=["documents"])
        entries = [json.loads(doc) for doc in result.get("documents") or []]
        return sorted(entries, key=lambda e: e["at_ts"])

    def generation(self) -> float | None:
        result = self._history_handle().get(ids=[_GENERATION_ID], include=["documents"])
        documents = result.get("documents") or []
        return float(json.loads(documents[0])) if documents else None

    def layout(self) -> int:
        result = self._history_handle().get(ids=[_LAYOUT_ID], include=["documents"])
        documents = result.get("documents") or []
        return int(json.loads(documents[0])) if documents else 1

    def set_layout(self, value: int) -> None:
        self._history_handle().upsert(ids=[_LAYOUT_ID], documents=[json.dumps(value)],
                                      embeddings=[_PLACEHOLDER_VECTOR], metadatas=[{"key": "layout"}])

    def set_sources(self, changes: Mapping[str, str]) -> None:
        """Rename the source of chunks: chunk id -> new source name (metadata only)."""
        collection = self._handle(create=False)
        if collection is None or not changes:
            return
        ids = list(changes)
        for start in range(0, len(ids), _ID_BATCH):
            part = ids[start:start + _ID_BATCH]
            collection.update(ids=part, metadatas=[{"source": changes[i]} for i in part])

    def set_generation(self, value: float) -> None:
        self._history_handle().upsert(
            ids=[_GENERATION_ID], documents=[json.dumps(value)], embeddings=[_PLACEHOLDER_VECTOR],
            metadatas=[{"key": "generation"}],
        )


def _source_filter(sources: Sequence[str] | None) -> dict[str, Any] | None:
    if sources is None:
        return None
    names = sorted(sources)
    return {"source": names[0]} if len(names) == 1 else {"source": {"$in": names}}

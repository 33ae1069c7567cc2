"""The Chroma side of the run log: one collection per namespace, `mnemic-<ns>-runs`.

A run (a crew's kickoff, say) is one header row and one row per step output. Rows carry the
run id, the owner and the row type as metadata, so a run is fetched, pruned or erased with one
`where`, never by scanning documents. Runs live in Chroma, not in a file beside it, because every
process of a server deployment must see the same runs: a replay in one worker finds the kickoff
another worker ran. They hold no meaningful vectors (a constant 1-d embedding, as the namespace's
history and settings do).

No other namespace's collection can be called `mnemic-<ns>-runs`: the others end in `-history`,
`-meta`, `-knowledge`, `-knowledge-audit` or `-m-<32 hex digits>`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .chroma import StoredRow, _rows, namespace_slug
from .retry import retrying

RUNS_COLLECTION_SUFFIX = "-runs"
_PLACEHOLDER_VECTOR = [1.0]
_ID_BATCH = 2000


class RunCollection:
    """upsert / get / delete on a namespace's run collection (created on first write)."""

    def __init__(self, client: Any, namespace: str) -> None:
        self.client = retrying(client)
        self.namespace = namespace
        self.name = f"mnemic-{namespace_slug(namespace)}{RUNS_COLLECTION_SUFFIX}"
        self._lock = threading.Lock()
        self._collection: Any | None = None

    def _handle(self, *, create: bool) -> Any | None:
        with self._lock:
            if self._collection is not None:
                return self._collection
            if create:
                self._collection = self.client.get_or_create_collection(
                    self.name, embedding_function=None, metadata={"mnemic": "runs", "namespace": self.namespace})
            else:
                try:
                    self._collection = self.client.get_collection(self.name, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
                    return None
            return self._collection

    def exists(self) -> bool:
        return self._handle(create=False) is not None

    def upsert(self, rows: Sequence[StoredRow]) -> None:
        """Write rows in one call, so a run's header and the step it counts land together."""
        if not rows:
            return
        collection = self._handle(create=True)
        assert collection is not None
        collection.upsert(ids=[r.id for r in rows], documents=[r.document for r in rows],
                          metadatas=[r.metadata for r in rows], embeddings=[_PLACEHOLDER_VECTOR] * len(rows))

    def get(self, *, ids: Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
            documents: bool = True) -> list[StoredRow]:
        collection = self._handle(create=False)
        if collection is None or (ids is not None and not ids):
            return []
        include = ["metadatas"] + (["documents"] if documents else [])
        if ids is None:
            return _rows(collection.get(where=dict(where) if where else None, include=include))
        rows: list[StoredRow] = []
        for start in range(0, len(ids), _ID_BATCH):
            rows.extend(_rows(collection.get(ids=list(ids[start:start + _ID_BATCH]),
                                             where=dict(where) if where else None, include=include)))
        return rows

    def delete(self, *, where: Mapping[str, Any]) -> None:
        collection = self._handle(create=False)
        if collection is None:
            return
        collection.delete(where=dict(where))

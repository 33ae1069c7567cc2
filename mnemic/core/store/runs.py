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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .chroma import StoredRow, _rows
from .naming import again_if_dropped, claim, namespace_slug
from .retry import retrying

RUNS_COLLECTION_SUFFIX = "-runs"
_PLACEHOLDER_VECTOR = [1.0]
_ID_BATCH = 2000
T = TypeVar("T")


class RunCollection:
    """upsert / get / delete on a namespace's run collection (created on first write)."""

    def __init__(self, client: Any, namespace: str, *, check_open: Callable[[], None] | None = None) -> None:
        self.client = retrying(client)
        self.namespace = namespace
        # The owner's "this Memory is closed", before Chroma's own error for a closed client.
        self._check_open = check_open
        self.name = f"mnemic-{namespace_slug(namespace)}{RUNS_COLLECTION_SUFFIX}"
        self._lock = threading.Lock()
        self._collection: Any | None = None

    def _handle(self, *, create: bool) -> Any | None:
        if self._check_open is not None:
            self._check_open()
        with self._lock:
            if self._collection is not None:
                return self._collection
            if create:
                found = self.client.get_or_create_collection(
                    self.name, embedding_function=None, metadata={"mnemic": "runs", "namespace": self.namespace})
            else:
                try:
                    found = self.client.get_collection(self.name, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
                    return None
            # Cached only once it is known to be this namespace's.
            self._collection = claim(found, self.namespace)
            return self._collection

    def exists(self) -> bool:
        return self._handle(create=False) is not None

    def handle(self) -> Any | None:
        """The Chroma collection, or None before the first run (for the erasure's scrubber)."""
        return self._handle(create=False)

    def reopen(self) -> None:
        """Forget the cached collection: the scrubber may have replaced it with a rebuilt one."""
        with self._lock:
            self._collection = None

    def _with(self, create: bool, operation: Callable[[Any], T]) -> T | None:
        """`operation` on the collection (None when there is none and `create` is false); one an
        erasure's scrub rebuilt meanwhile is opened again once (`naming.again_if_dropped`)."""
        return again_if_dropped(lambda: self._handle(create=create), operation, self.reopen, None)

    def upsert(self, rows: Sequence[StoredRow]) -> None:
        """Write rows in one call, so a run's header and the step it counts land together."""
        if not rows:
            return
        self._with(True, lambda c: c.upsert(ids=[r.id for r in rows], documents=[r.document for r in rows],
                                            metadatas=[r.metadata for r in rows],
                                            embeddings=[_PLACEHOLDER_VECTOR] * len(rows)))

    def get(self, *, ids: Sequence[str] | None = None, where: Mapping[str, Any] | None = None,
            documents: bool = True) -> list[StoredRow]:
        if ids is not None and not ids:
            return []
        include = ["metadatas"] + (["documents"] if documents else [])
        filters = dict(where) if where else None

        def read(collection: Any) -> list[StoredRow]:
            if ids is None:
                return _rows(collection.get(where=filters, include=include))
            rows: list[StoredRow] = []
            for start in range(0, len(ids), _ID_BATCH):
                rows.extend(_rows(collection.get(ids=list(ids[start:start + _ID_BATCH]), where=filters,
                                                 include=include)))
            return rows

        return self._with(False, read) or []

    def delete(self, *, where: Mapping[str, Any]) -> None:
        self._with(False, lambda c: c.delete(where=dict(where)))

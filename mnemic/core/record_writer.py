"""The one way a user's records change: the audit entry first, then Chroma, then the lexical cache.

That order is what crash repair relies on. An entry written before its mutation carries the
version the mutation produces, so `history.applied_entries` leaves out one whose change never
landed; the lexical index is a cache that `LexicalSync` repairs from Chroma on open. The write
pipeline, notes and the record changes (update/invalidate/confirm/delete/forget) all write through
here, under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .codec import from_metadata, to_metadata
from .history import Action, entry
from .lexical import LexicalIndex
from .records import MemoryRecord
from .store import ChromaStore, StoredRow, owner_key


class RecordWriter:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex,
                 embed: Callable[[Sequence[str]], np.ndarray]) -> None:
        self.store = store
        self.lexical = lexical
        self._embed = embed
        # Reentrant: a mutation reads the record it changes, and the pipeline retires records
        # while it holds the lock for a whole batch.
        self.lock = threading.RLock()

    @staticmethod
    def decode(row: StoredRow) -> MemoryRecord:
        return from_metadata(row.id, row.document, row.metadata)

    def read(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The user's records among `ids`, in whatever order Chroma returns them; unknown ids are left out."""
        return [self.decode(row) for row in self.store.get(user_id, ids=list(ids))] if ids else []

    def insert(self, user_id: str, records: Sequence[MemoryRecord], vectors: Sequence[np.ndarray] | np.ndarray, *,
               actor: str, details: Sequence[dict[str, Any] | None] | None = None) -> None:
        """New records (their "add" entries first), all of one user."""
        if not records:
            return
        extra = details or [None] * len(records)
        self.store.add_history([
            entry("add", record=r, actor=actor, before=None, after=r, version=r.version, details=d)
            for r, d in zip(records, extra, strict=True)
        ])
        self.store.add(user_id, [StoredRow(id=r.id, document=r.text, metadata=to_metadata(r), embedding=v)
                                 for r, v in zip(records, vectors, strict=True)])
        self.index(records)

    def update(self, before: MemoryRecord, after: MemoryRecord, *, action: Action, actor: str,
               reason: str | None, reembed: bool, details: dict[str, Any] | None = None) -> None:
        """Replace a record's text and metadata; its vector too when `reembed` (the text changed)."""
        self.store.add_history([entry(action, record=after, actor=actor, before=before, after=after,
                                      reason=reason, version=after.version, details=details)])
        vector = self._embed([after.text])[0] if reembed else None
        self.store.replace_metadata(after.user_id, [
            StoredRow(after.id, after.text, to_metadata(after, for_update=True), vector)
        ])
        self.index([after])

    def refresh(self, records: Sequence[MemoryRecord]) -> None:
        """Rewrite bookkeeping that is not a change of the record (expiry, last access): no
        history entry, no new version. Records of one user, read under `lock`."""
        if records:
            self.store.replace_metadata(records[0].user_id, [
                StoredRow(r.id, r.text, to_metadata(r, for_update=True)) for r in records
            ])

    def remove(self, record: MemoryRecord, *, actor: str, reason: str | None) -> None:
        """Delete a record for good; its history keeps a tombstone."""
        self.store.add_history([entry("delete", record=record, actor=actor, before=record, after=None,
                                      reason=reason, version=record.version + 1)])
        self.store.delete(record.user_id, [record.id])
        self.lexical.delete([record.id])

    def erase(self, user_id: str, records: Sequence[MemoryRecord], *, actor: str) -> int:
        """Remove records and their text from the audit trail too (erasure): what remains is a
        tombstone saying that something was erased, when and by whom, not whose it was."""
        if not records:
            return 0
        ids = [r.id for r in records]
        self.store.delete(user_id, ids)
        self.lexical.delete(ids)
        self.store.delete_history(self.store.history_ids_for_records(ids))
        tombstones = []
        for record in records:
            tomb = entry("forget", record=record, actor=actor, before=None, after=None,
                         reason="erased", version=record.version + 1)
            tomb["user_id"] = "erased:" + owner_key(record.user_id)[:16]
            tombstones.append(tomb)
        self.store.add_history(tombstones)
        return len(records)

    def index(self, records: Sequence[MemoryRecord]) -> None:
        """Put records (all of one user) in the lexical index, with where each turn sits."""
        if not records:
            return
        collection = self.store.collection_name(records[0].user_id)
        self.lexical.upsert(((r.id, collection, r.user_id, r.text, r.version) for r in records),
                            turns={r.id: (r.session_id, r.turn) for r in records
                                   if r.session_id is not None and r.turn is not None})
        self.lexical.set_watermark(collection, max(r.updated_at.timestamp() for r in records))

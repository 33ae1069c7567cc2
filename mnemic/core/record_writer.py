"""The one way a user's records change: the audit entry first, then Chroma, then the lexical cache.

That order is what crash repair relies on. An entry written before its mutation carries the
version the mutation produces, so `history.applied_entries` leaves out one whose change never
landed; the lexical index is a cache that `LexicalSync` repairs from Chroma on open. The write
pipeline, notes and the record changes (update/invalidate/confirm/delete/forget) all write through
here, under one lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .codec import from_metadata, to_metadata
from .history import Action, entry
from .identity import erased_owner_id
from .lexical import LexicalIndex
from .records import MemoryRecord
from .store import ChromaStore, StoredRow

log = logging.getLogger("mnemic")


class RecordLock:
    """The record lock: held by whoever changes a namespace's records, for the whole change.

    THE LOCK ORDER RULE (one for the whole package): never wait for the background writer
    (`drain()`, or the result of a queued job) while holding this lock. Queued jobs run on the
    writer thread and take this lock, so a caller that holds it and waits for them waits forever.
    A call that must see queued writes drains first and locks after. The only locks taken inside
    this one are leaf locks (the lexical index's, the store's collection cache, the writer's queue
    bookkeeping), which never wait for anything. `BackgroundWriter` checks `held()` and refuses a
    wait that breaks the rule, so a breach fails at once instead of hanging.

    Reentrant: a mutation reads the record it changes, and the pipeline retires records while it
    holds the lock for a whole batch.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = threading.local()

    def __enter__(self) -> RecordLock:
        self._lock.acquire()
        self._depth.value = getattr(self._depth, "value", 0) + 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth.value -= 1
        self._lock.release()

    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
        return getattr(self._depth, "value", 0) > 0


class RecordWriter:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex,
                 embed: Callable[[Sequence[str]], np.ndarray], *,
                 admit: Callable[[MemoryRecord, MemoryRecord | None], None] | None = None) -> None:
        self.store = store
        self.lexical = lexical
        self._embed = embed
        # Called for every record (and the version it replaces) before its first write (see
        # Intake.admit); raising refuses it.
        self._admit = admit or (lambda record, before: None)
        self.lock = RecordLock()

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
        for record in records:
            self._admit(record, None)
        extra = details or [None] * len(records)
        entries = [entry("add", record=r, actor=actor, before=None, after=r, version=r.version, details=d)
                   for r, d in zip(records, extra, strict=True)]
        self.store.add_history(entries)
        try:
            self.store.add(user_id, [StoredRow(id=r.id, document=r.text, metadata=to_metadata(r), embedding=v)
                                     for r, v in zip(records, vectors, strict=True)])
        except BaseException:
            self._withdraw(entries, landed=lambda: {r.id for r in self.read(user_id, [r.id for r in records])})
            raise
        self.index(records)

    def update(self, before: MemoryRecord, after: MemoryRecord, *, action: Action, actor: str,
               reason: str | None, reembed: bool, details: dict[str, Any] | None = None) -> None:
        """Replace a record's text and metadata; its vector too when `reembed` (the text changed)."""
        self._admit(after, before)
        vector = self._embed([after.text])[0] if reembed else None
        change = entry(action, record=after, actor=actor, before=before, after=after, reason=reason,
                       version=after.version, details=details)
        self.store.add_history([change])
        try:
            self.store.replace_metadata(after.user_id, [
                StoredRow(after.id, after.text, to_metadata(after, for_update=True), vector)
            ])
        except BaseException:
            self._withdraw([change])
            raise
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
        tombstone = entry("delete", record=record, actor=actor, before=record, after=None, reason=reason,
                          version=record.version + 1)
        self.store.add_history([tombstone])
        try:
            self.store.delete(record.user_id, [record.id])
        except BaseException:
            self._withdraw([tombstone])
            raise
        self.lexical.delete(self.store.collection_name(record.user_id), [record.id])

    def erase(self, user_id: str, records: Sequence[MemoryRecord], *, actor: str) -> int:
        """Remove records and their text from the audit trail too (erasure): what remains is a
        tombstone saying that something was erased, when and by whom, not whose it was."""
        if not records:
            return 0
        ids = [r.id for r in records]
        self.store.delete(user_id, ids)
        self.lexical.delete(self.store.collection_name(user_id), ids)
        self.store.delete_history(self.store.history_ids_for_records(ids))
        tombstones = []
        for record in records:
            tomb = entry("forget", record=record, actor=actor, before=None, after=None,
                         reason="erased", version=record.version + 1)
            tomb["user_id"] = erased_owner_id(record.user_id)
            tombstones.append(tomb)
        self.store.add_history(tombstones)
        return len(records)

    def _withdraw(self, entries: Sequence[dict[str, Any]],
                  landed: Callable[[], set[str]] | None = None) -> None:
        """Take back the audit entries of a change that failed (those of records that did land
        stay). Best effort: an entry left behind names a version its record never reached, and
        `history.applied_entries` leaves it out."""
        try:
            kept = landed() if landed is not None else set()
            self.store.delete_history([e["entry_id"] for e in entries if e["record_id"] not in kept])
        except Exception as exc:
            log.warning("could not withdraw the audit entries of a failed change: %s", exc)

    def index(self, records: Sequence[MemoryRecord]) -> None:
        """Put records (all of one user) in the lexical index, with where each turn sits."""
        if not records:
            return
        collection = self.store.collection_name(records[0].user_id)
        self.lexical.upsert(((r.id, collection, r.user_id, r.text, r.version) for r in records),
                            turns={r.id: (r.session_id, r.turn) for r in records
                                   if r.session_id is not None and r.turn is not None})
        self.lexical.set_watermark(collection, max(r.updated_at.timestamp() for r in records))

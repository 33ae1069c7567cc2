"""Keeps the lexical index in line with Chroma, which is the truth.

On open every user's index entries are checked against their collection (a crash may have left a
record unindexed, or indexed a change that never landed). Against a Chroma server other processes
write too, so a user's entries are re-checked before a read, at most every SERVER_SYNC_INTERVAL_S.
A watermark per collection (the newest change indexed) lets a check read only what changed since.
"""

from __future__ import annotations

import time

from .lexical import LexicalIndex
from .record_writer import RecordWriter
from .store import ChromaStore
from .store.naming import MEMORY_COLLECTION_INFIX

SERVER_SYNC_INTERVAL_S = 2.0


class LexicalSync:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex, records: RecordWriter, *,
                 single_writer: bool) -> None:
        self._store = store
        self._lexical = lexical
        self._records = records
        # Embedded: this process holds the path lock, so nobody else changes the records.
        self._single_writer = single_writer
        self._last_sync: dict[str, float] = {}

    def repair(self, *, full: bool = False) -> int:
        """Bring every user's index entries in line with Chroma; returns how many were added,
        changed or dropped. `full` reads every record, not only those changed since the watermark
        (after a crash, an entry can be ahead of a change that never landed). The entries of a
        user who has no collection any more (another process erased them, against a server) are
        dropped too, and the file is scrubbed once if any entry was dropped: their words must not
        outlive the erasure here."""
        users = self._store.users()
        changed, dropped = 0, 0
        for user_id in users:
            synced = self._sync(user_id, full=full)
            changed, dropped = changed + synced[0], dropped + synced[1]
        gone = self._drop_erased_users({self._store.collection_name(u) for u in users})
        if dropped or gone:
            self._lexical.scrub()  # once for every user
        return changed + gone

    def _drop_erased_users(self, present: set[str]) -> int:
        prefix = self._store.prefix + MEMORY_COLLECTION_INFIX
        gone = [name for name in self._lexical.collections()
                if name.startswith(prefix) and len(name) == len(prefix) + 32 and name not in present]
        dropped = 0
        for name in gone:
            dropped += len(self._lexical.versions(name))
            self._lexical.drop_collection(name)
        return dropped

    def maybe_sync(self, user_id: str) -> None:
        """Before a read: catch up with other processes' writes, when there can be any."""
        if self._single_writer:
            return
        now = time.monotonic()
        if now - self._last_sync.get(user_id, 0.0) >= SERVER_SYNC_INTERVAL_S:
            self._last_sync[user_id] = now
            self.sync_user(user_id)

    def sync_user(self, user_id: str, *, full: bool = False) -> int:
        """Bring one user's entries in line with Chroma; returns how many were added, changed or
        dropped. Entries of records gone from Chroma (erased, against a server by another process)
        are dropped and the file scrubbed of them at once: the erasing process scrubs only its own
        files, and this one's would keep the words in old index segments and its WAL while it runs."""
        changed, dropped = self._sync(user_id, full=full)
        if dropped:
            self._lexical.scrub()
        return changed

    def _sync(self, user_id: str, *, full: bool) -> tuple[int, int]:
        """(entries added, changed or dropped; of those, dropped), without scrubbing."""
        collection = self._store.collection_name(user_id)
        indexed = self._lexical.versions(collection)
        watermark = self._lexical.watermark(collection)
        count = self._store.count(user_id)
        if not full and watermark is not None and count == len(indexed):
            # Only records written after the watermark can be missing or stale.
            rows = self._store.iterate(user_id, where={"updated_at": {"$gte": watermark - 1.0}})
            records = [self._records.decode(row) for row in rows]
            stale_ids: list[str] = []
        else:
            records = [self._records.decode(row) for row in self._store.iterate(user_id)]
            present = {r.id for r in records}
            stale_ids = [rid for rid in indexed if rid not in present]
        todo = [r for r in records if indexed.get(r.id) != r.version]
        if stale_ids:
            self._lexical.delete(collection, stale_ids)
        self._records.index(todo)
        if records:
            self._lexical.set_watermark(collection, max(r.updated_at.timestamp() for r in records))
        elif watermark is None:
            self._lexical.set_watermark(collection, 0.0)
        return len(todo) + len(stale_ids), len(stale_ids)

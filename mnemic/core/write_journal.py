"""The write-ahead journal of `remember_many()`: what it acknowledged survives the process.

`remember_many()` returns before its statements are embedded and stored (the background writer
does that). Without a journal, a crash between the two loses statements the caller was told were
accepted. So each accepted statement is first written here, in one local transaction synced to disk, and only
then queued; the writer marks the entries done once their
batch has run, stored or failed (a failure is reported by `drain_writes()`/`close()`, and must not
be replayed forever). On open, entries still pending are written before the store serves anything.

The journal lives in the local database: in an embedded store, `lexical.sqlite3` beside Chroma.
With a Chroma server it lives in `lexical_path` when one is given; without one it is in memory,
and statements still queued when the process dies are lost (measured: bench/bench_remember_many_kill.py).
Erasure reaches it: `forget(user_id=...)` removes the user's entries, and the scrub rewrites the file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .local_db import LocalDatabase
from .records import MemoryRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS write_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    user_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    record TEXT NOT NULL,
    accepted_at REAL
);
"""


@dataclass(frozen=True)
class Journaled:
    seq: int
    actor: str
    record: MemoryRecord
    # When remember_many() accepted it (None in entries a journal without the column holds):
    # an erasure of the user after this time drops it (see erasures.py).
    accepted_at: float | None = None


class WriteJournal:
    def __init__(self, database: LocalDatabase, namespace: str) -> None:
        self._db = database
        self.namespace = namespace
        with database.lock:
            database.connection.executescript(_SCHEMA)
            columns = {row[1] for row in database.connection.execute("PRAGMA table_info(write_journal)")}
            if "accepted_at" not in columns:  # a journal an older mnemic made
                database.connection.execute("ALTER TABLE write_journal ADD COLUMN accepted_at REAL")

    @property
    def durable(self) -> bool:
        return self._db.persistent

    def append(self, records: Sequence[MemoryRecord], *, actor: str) -> list[Journaled]:
        with self._db.transaction(durable=True) as connection:  # acknowledged once this returns
            entries = []
            accepted = time.time()
            for record in records:
                cursor = connection.execute(
                    "INSERT INTO write_journal(namespace, user_id, actor, record, accepted_at) VALUES (?, ?, ?, ?, ?)",
                    (self.namespace, record.user_id, actor, record.model_dump_json(), accepted))
                entries.append(Journaled(int(cursor.lastrowid or 0), actor, record, accepted))
        return entries

    def done(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        with self._db.transaction() as connection:
            for start in range(0, len(seqs), 500):
                chunk = list(seqs[start:start + 500])
                connection.execute(f"DELETE FROM write_journal WHERE seq IN ({','.join('?' * len(chunk))})", chunk)

    def pending(self) -> list[Journaled]:
        rows = self._db.execute("SELECT seq, actor, record, accepted_at FROM write_journal WHERE namespace = ? "
                                "ORDER BY seq", (self.namespace,))
        return [Journaled(int(seq), str(actor), MemoryRecord.model_validate(json.loads(body)),
                          float(accepted) if accepted is not None else None)
                for seq, actor, body, accepted in rows]

    def erase_user(self, user_id: str) -> None:
        with self._db.transaction() as connection:
            connection.execute("DELETE FROM write_journal WHERE namespace = ? AND user_id = ?",
                               (self.namespace, user_id))

"""The audit trail of an embedded store, in its local database rather than in Chroma.

Only one process writes an embedded store, so the trail needs no server to be shared through, and a
change then costs one Chroma write instead of two (the entry was a Chroma write of its own, as
slow as the record's). The entry lands in the same local transaction as the record's keyword row,
before the record is written to Chroma; `history.applied_entries` leaves out an entry whose change
never landed. A namespace shares the file with the other namespaces of its path: every row carries
its namespace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .history import Action, redacted, without_reason
from .local_db import LocalDatabase

_SCHEMA = """
CREATE TABLE IF NOT EXISTS history (
    entry_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    record_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    action TEXT NOT NULL,
    at REAL NOT NULL,
    version INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS history_by_record ON history(namespace, record_id);
"""
_CHUNK = 500


class LocalHistory:
    def __init__(self, database: LocalDatabase, namespace: str) -> None:
        self._db = database
        self.namespace = namespace
        with database.lock:
            database.connection.executescript(_SCHEMA)

    def add(self, entries: Sequence[dict[str, Any]]) -> None:
        if not entries:
            return
        with self._db.transaction() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO history(entry_id, namespace, record_id, user_id, action, at, version, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(e["entry_id"], self.namespace, e["record_id"], e["user_id"], e["action"], float(e["at_ts"]),
                  int(e["version"]), json.dumps(e, default=str)) for e in entries],
            )

    def is_empty(self) -> bool:
        """Whether the namespace has no audit entry at all (one index seek)."""
        return not self._db.execute("SELECT 1 FROM history WHERE namespace = ? LIMIT 1", (self.namespace,))

    def for_record(self, record_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT body FROM history WHERE namespace = ? AND record_id = ?",
                                (self.namespace, record_id))
        entries = [json.loads(body) for (body,) in rows]
        return sorted(entries, key=lambda e: (e["at_ts"], e["version"]))

    def _select(self, column: str, record_ids: Sequence[str], condition: str = "") -> list[Any]:
        found: list[Any] = []
        for start in range(0, len(record_ids), _CHUNK):
            chunk = list(record_ids[start:start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            found += [row[0] for row in self._db.execute(
                f"SELECT {column} FROM history WHERE namespace = ? AND record_id IN ({marks}){condition}",
                (self.namespace, *chunk))]
        return found

    def ids_for_records(self, record_ids: Sequence[str]) -> list[str]:
        return self._select("entry_id", record_ids)

    def removed(self, record_ids: Sequence[str]) -> set[str]:
        return set(self._select("record_id", record_ids, " AND action IN ('delete', 'forget')"))

    def delete(self, entry_ids: Sequence[str]) -> None:
        with self._db.transaction() as connection:
            for start in range(0, len(entry_ids), _CHUNK):
                chunk = list(entry_ids[start:start + _CHUNK])
                connection.execute(f"DELETE FROM history WHERE entry_id IN ({','.join('?' * len(chunk))})", chunk)

    def redact(self, record_ids: Sequence[str]) -> None:
        """Keep the records' entries (who did what, when) without anything the records said."""
        with self._db.transaction() as connection:
            for start in range(0, len(record_ids), _CHUNK):
                chunk = list(record_ids[start:start + _CHUNK])
                rows = connection.execute(
                    f"SELECT entry_id, body FROM history WHERE namespace = ? AND record_id IN "
                    f"({','.join('?' * len(chunk))})", (self.namespace, *chunk)).fetchall()
                connection.executemany("UPDATE history SET body = ? WHERE entry_id = ?",
                                       [(json.dumps(redacted(json.loads(body)), default=str), entry_id)
                                        for entry_id, body in rows])

    def drop_reasons(self, record_ids: Sequence[str], action: Action) -> None:
        with self._db.transaction() as connection:
            for start in range(0, len(record_ids), _CHUNK):
                chunk = list(record_ids[start:start + _CHUNK])
                rows = connection.execute(
                    f"SELECT entry_id, body FROM history WHERE namespace = ? AND action = ? AND record_id IN "
                    f"({','.join('?' * len(chunk))})", (self.namespace, action, *chunk)).fetchall()
                connection.executemany("UPDATE history SET body = ? WHERE entry_id = ?",
                                       [(json.dumps(without_reason(json.loads(body)), default=str), entry_id)
                                        for entry_id, body in rows])

    def clear(self) -> None:
        with self._db.transaction() as connection:
            connection.execute("DELETE FROM history WHERE namespace = ?", (self.namespace,))

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM history WHERE namespace = ?", (self.namespace,))[0][0])

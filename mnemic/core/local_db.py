"""The SQLite database a store keeps beside Chroma: `lexical.sqlite3` in embedded mode.

The keyword index, the audit trail (embedded mode) and the journal of queued writes share this one
connection, so a change's audit entry and its keyword row land in one transaction, and erasure has
one local file to scrub. The file is opened by `durable.connect_sqlite` (WAL, full sync,
`secure_delete`: a deleted row's bytes are overwritten, not left in free pages). Without a path
(a Chroma server and no `lexical_path`) the database lives in memory and dies with the process.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .durable import connect_sqlite


class LocalDatabase:
    """One connection, one lock, and transactions that nest (an inner one joins the outer one)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is None:
            self.connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self.connection.execute("PRAGMA secure_delete = ON")
        else:
            self.connection = connect_sqlite(self.path)
            # A change commits here just before its Chroma write, which it cannot outlive anyway;
            # NORMAL (no fsync per commit in WAL mode) survives a killed process, and costs ~1 ms
            # less per write than FULL on this machine. Commits that acknowledge something on
            # their own (the write journal) ask for a durable one.
            self.connection.execute("PRAGMA synchronous = NORMAL")
        # Reentrant, and held for a whole transaction: another thread's statement must never land
        # inside a transaction it did not open.
        self.lock = threading.RLock()
        self._depth = 0

    @property
    def persistent(self) -> bool:
        return self.path is not None

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """`with db.transaction():` commits everything inside at once, or nothing on an exception.
        Inside another transaction it joins that one. `durable`: the commit is on disk (fsynced)
        when this returns, not only safe from a killed process."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.connection
                finally:
                    self._depth -= 1
                return
            sync = durable and self.persistent
            if sync:
                self.connection.execute("PRAGMA synchronous = FULL")
            self.connection.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                try:
                    yield self.connection
                except BaseException:
                    self._depth = 0
                    self.connection.execute("ROLLBACK")
                    raise
                self._depth = 0
                self.connection.execute("COMMIT")
            finally:
                if sync:
                    self.connection.execute("PRAGMA synchronous = NORMAL")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement under the lock and return its rows."""
        with self.lock:
            return self.connection.execute(sql, params).fetchall()

    def scrub(self) -> None:
        """After an erasure: rewrite the file (secure_delete zeroes freed cells and pages, but a page
        SQLite rebalanced can keep an old cell in its unused middle: seen in tests), then fold the
        WAL into the database and truncate it, so no old page image stays in the -wal file."""
        if self.persistent:
            with self.lock:
                self.connection.execute("VACUUM")
                self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self.lock:
            self.connection.close()

"""The SQLite database a store keeps beside Chroma: `lexical.sqlite3` in embedded mode.

The keyword index, the audit trail (embedded mode) and the journal of queued writes share this one
connection, so a change's audit entry and its keyword row land in one transaction, and erasure has
one local file to scrub. The file is opened by `durable.connect_sqlite` (WAL, full sync,
`secure_delete`: a deleted row's bytes are overwritten, not left in free pages). Without a path
(a Chroma server and no `lexical_path`) the database lives in memory and dies with the process.
"""

from __future__ import annotations

import contextlib
import itertools
import shlex
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .durable import connect_sqlite, is_corruption

_SIDE_FILES = ("-wal", "-shm")


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _free_name(path: Path) -> Path:
    """Where to move a damaged file: a name no earlier damaged file was moved to."""
    for attempt in itertools.count(1):
        candidate = _beside(path, ".corrupt" if attempt == 1 else f".corrupt-{attempt}")
        if not any(_beside(candidate, suffix).exists() for suffix in ("", *_SIDE_FILES)):
            return candidate
    raise AssertionError("unreachable")


class CorruptLocalDatabaseError(RuntimeError):
    """The store's local database is damaged, or is not an SQLite database: raised by opening the
    store (and by `repair()`, which reads every page).

    The message names the file, what it holds, what is lost by moving it aside, and the commands
    that do so. mnemic never replaces the file itself: it may hold statements `remember_many()`
    accepted and has not stored yet. `path` is the file; `moved_to` where the message moves it.
    """

    def __init__(self, path: Path, reason: str, *, audit_trail: bool) -> None:
        self.path = path
        self.moved_to = _free_name(path)
        # SQLite finds a database's WAL by name: moved as <name>-wal it stays with its database,
        # and a WAL left behind would be replayed into the new file.
        moves = [(path, self.moved_to)] + [
            (_beside(path, suffix), _beside(self.moved_to, suffix))
            for suffix in _SIDE_FILES if _beside(path, suffix).exists()]
        commands = " && ".join(f"mv {shlex.quote(str(old))} {shlex.quote(str(new))}" for old, new in moves)
        trail = "the audit trail that history() reads, " if audit_trail else ""
        lost = ("The audit trail of the changes made so far and any queued statements are" if audit_trail
                else "Any queued statements are")
        super().__init__(
            f"the store's local database {path} cannot be read: {reason} (the file is damaged, or is not an "
            f"SQLite database). It holds the keyword index, {trail}and the journal of statements remember_many() "
            f"accepted but had not stored yet; the records themselves are in Chroma, not in this file. mnemic does "
            f"not replace it for you, since it may hold queued statements. To open the store, stop every process "
            f"using it, move the file aside{' with the -wal/-shm files beside it' if len(moves) > 1 else ''}:\n"
            f"    {commands}\n"
            f"and open the store again: the keyword index is rebuilt from Chroma. {lost} not carried over: they "
            f"stay in {self.moved_to.name} (`sqlite3 {shlex.quote(str(self.moved_to))} .recover` may salvage some).")


class LocalDatabase:
    """One connection, one lock, and transactions that nest (an inner one joins the outer one).

    `audit_trail` says whether the file keeps the namespace's audit trail (an embedded store), for
    the error that explains a damaged file."""

    def __init__(self, path: str | Path | None, *, audit_trail: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        self.audit_trail = audit_trail
        if self.path is None:
            self.connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self.connection.execute("PRAGMA secure_delete = ON")
        else:
            with self.explaining_corruption():
                self.connection = connect_sqlite(self.path)
                try:
                    # A change commits here just before its Chroma write, which it cannot outlive
                    # anyway; NORMAL (no fsync per commit in WAL mode) survives a killed process, and
                    # costs ~1 ms less per write than FULL on this machine. Commits that acknowledge
                    # something on their own (the write journal) ask for a durable one.
                    self.connection.execute("PRAGMA synchronous = NORMAL")
                    # Reads the schema: a damaged file fails here, not at the first write.
                    self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
                except BaseException:
                    self.connection.close()
                    raise
        # Reentrant, and held for a whole transaction: another thread's statement must never land
        # inside a transaction it did not open.
        self.lock = threading.RLock()
        self._depth = 0

    @property
    def persistent(self) -> bool:
        return self.path is not None

    def explained(self, error: BaseException) -> CorruptLocalDatabaseError | None:
        """`error` as the error that names this file and the way out, when it says the file is damaged."""
        if self.path is None or not is_corruption(error):
            return None
        return CorruptLocalDatabaseError(self.path, str(error), audit_trail=self.audit_trail)

    def check_integrity(self) -> None:
        """Read every page (SQLite's quick_check: ~2 ms per MB) and raise CorruptLocalDatabaseError
        if one is damaged. Opening reads only the header and the schema, so a page damaged in the
        middle of the file would otherwise surface as an odd error at some later read; the full
        checks (`repair()`, an open after a crash) run this."""
        if self.path is None:
            return
        with self.explaining_corruption():
            problems = [row[0] for row in self.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise CorruptLocalDatabaseError(self.path, f"its integrity check found {len(problems)} problem(s), "
                                            f"the first: {problems[0]}", audit_trail=self.audit_trail)

    @contextlib.contextmanager
    def explaining_corruption(self) -> Iterator[None]:
        """Inside, an SQLite error that says the file is damaged becomes CorruptLocalDatabaseError."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            explained = self.explained(error)
            if explained is None:
                raise
            raise explained from error

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

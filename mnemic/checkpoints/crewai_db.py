"""CrewAI's SQLite checkpoint layout, on the SQLite Python ships with (3.40 on Debian 12).

CrewAI's `SqliteProvider` stores each checkpoint with `jsonb(?)`, a function SQLite gained in
3.45: on an older library every save fails with `no such function: jsonb`, is only logged, and
the crew carries on with no checkpoint at all. This layout keeps CrewAI's table (`checkpoints`:
id, created_at, parent_id, branch, data) so CrewAI's reader restores from it (`SELECT json(data)`
works on JSON text in every SQLite with JSON1), stores `data` as JSON text, and adds `user_id`
for erasure. Writes go through `core.durable`: WAL, `synchronous=FULL`, one transaction each.

A database CrewAI's provider wrote on a newer SQLite holds binary JSON rows; they are listed,
and read where this SQLite can decode them, with an error naming the version otherwise.
Checkpoints arrive one per event from CrewAI's event thread pool, so writes reuse one connection
per database and process (opened again when the file is replaced or removed): opening SQLite and
closing its last connection, which checkpoints the WAL into the database, cost more than the write.

This module imports no framework: the operator CLI lists and prunes with it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..core.durable import connect_sqlite, transaction

TABLE = "checkpoints"
_CREATE = (
    "CREATE TABLE IF NOT EXISTS checkpoints (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, parent_id TEXT, "
    "branch TEXT NOT NULL DEFAULT 'main', data TEXT NOT NULL, user_id TEXT)"
)
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS idx_checkpoints_branch ON checkpoints(branch)",
    "CREATE INDEX IF NOT EXISTS idx_checkpoints_user ON checkpoints(user_id)",
)
_PRUNE = (
    "DELETE FROM checkpoints WHERE branch = ? AND rowid NOT IN "
    "(SELECT rowid FROM checkpoints WHERE branch = ? ORDER BY rowid DESC LIMIT ?)"
)


@dataclass(frozen=True)
class CheckpointRow:
    id: str
    created_at: str
    parent_id: str | None
    branch: str
    user_id: str | None
    size: int
    binary: bool


def split_location(location: str) -> tuple[str, str]:
    """`db_path#checkpoint_id` (what a save returns) as its two parts."""
    if "#" not in location:
        raise ValueError(f"a SQLite checkpoint is named 'path/to/db#checkpoint_id', got {location!r}")
    path, checkpoint_id = location.rsplit("#", 1)
    return path, checkpoint_id


def _ensure_schema(connection: sqlite3.Connection) -> None:
    columns = {row[1] for row in connection.execute("PRAGMA table_info(checkpoints)")}
    if columns and "user_id" in columns:
        return
    with transaction(connection):
        connection.execute(_CREATE)
        if columns:  # a database CrewAI's own provider created: give it the owner column
            connection.execute("ALTER TABLE checkpoints ADD COLUMN user_id TEXT")
        for statement in _INDEXES:
            connection.execute(statement)


@contextmanager
def opened(path: str | Path, *, create: bool = True) -> Iterator[sqlite3.Connection]:
    target = Path(path)
    if not create and not target.exists():
        raise FileNotFoundError(f"no checkpoint database at {target}")
    with closing(connect_sqlite(target)) as connection:
        _ensure_schema(connection)
        yield connection


_writers: dict[tuple[int, str], tuple[sqlite3.Connection, int, threading.Lock]] = {}
_writers_lock = threading.Lock()


@contextmanager
def _writer(path: str | Path) -> Iterator[sqlite3.Connection]:
    """This process's write connection to `path`, used by one thread at a time."""
    target = Path(path)
    key = (os.getpid(), str(target.resolve()))
    with _writers_lock:
        entry = _writers.get(key)
        try:
            current = os.stat(target).st_ino
        except FileNotFoundError:
            current = None
        if entry is None or entry[1] != current:  # never written here, or the file was replaced
            if entry is not None:
                entry[0].close()
            connection = connect_sqlite(target)
            _ensure_schema(connection)
            entry = (connection, os.stat(target).st_ino, threading.Lock())
            _writers[key] = entry
    with entry[2]:
        yield entry[0]


def close_connections() -> None:
    """Close this process's write connections (they reopen on the next write)."""
    with _writers_lock:
        for connection, _, _ in _writers.values():
            connection.close()
        _writers.clear()


def new_checkpoint_id() -> str:
    return f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S')}_{uuid.uuid4().hex[:8]}"


def insert(path: str | Path, data: str, *, parent_id: str | None, branch: str, owner: str | None) -> str:
    """Store one checkpoint in one transaction; returns its id."""
    checkpoint_id = new_checkpoint_id()
    created = checkpoint_id.split("_", 1)[0]
    with _writer(path) as connection, transaction(connection):
        connection.execute(
            "INSERT INTO checkpoints (id, created_at, parent_id, branch, data, user_id) VALUES (?, ?, ?, ?, ?, ?)",
            (checkpoint_id, created, parent_id, branch, data, owner),
        )
    return checkpoint_id


def read(path: str | Path, checkpoint_id: str) -> str:
    """The checkpoint's JSON text."""
    with opened(path, create=False) as connection:
        row = connection.execute("SELECT data FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
        if row is None:
            raise ValueError(f"Checkpoint not found: {checkpoint_id}")
        value = row[0]
        if isinstance(value, str):
            return value
        try:  # binary JSON from CrewAI's provider: readable where this SQLite knows it
            decoded = connection.execute("SELECT json(?)", (value,)).fetchone()[0]
        except sqlite3.Error as exc:
            raise ValueError(
                f"checkpoint {checkpoint_id} was stored by CrewAI's SqliteProvider as SQLite binary JSON, which "
                f"needs SQLite 3.45 or newer; this Python has SQLite {sqlite3.sqlite_version} ({exc})"
            ) from exc
        return str(decoded)


def rows(path: str | Path, *, branch: str | None = None) -> list[CheckpointRow]:
    """Checkpoints in the database, oldest first (without their data)."""
    query = ("SELECT id, created_at, parent_id, branch, user_id, length(data), typeof(data) = 'blob' "
             "FROM checkpoints" + (" WHERE branch = ?" if branch is not None else "") + " ORDER BY rowid")
    with opened(path, create=False) as connection:
        found = connection.execute(query, (branch,) if branch is not None else ()).fetchall()
    return [CheckpointRow(id=r[0], created_at=r[1], parent_id=r[2], branch=r[3], user_id=r[4],
                          size=int(r[5] or 0), binary=bool(r[6])) for r in found]


def branches(path: str | Path) -> list[str]:
    with opened(path, create=False) as connection:
        return [r[0] for r in connection.execute("SELECT DISTINCT branch FROM checkpoints ORDER BY branch")]


def prune(path: str | Path, keep: int, *, branch: str = "main") -> int:
    """Keep the newest `keep` checkpoints of `branch`; returns how many were removed."""
    if keep < 0:
        raise ValueError(f"keep is a number of checkpoints >= 0, got {keep}")
    if not Path(path).exists():
        return 0
    with _writer(path) as connection, transaction(connection):
        removed = connection.execute(_PRUNE, (branch, branch, keep)).rowcount
    return max(int(removed), 0)


def is_database(path: str | Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False

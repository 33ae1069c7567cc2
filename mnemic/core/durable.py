"""Writes that survive a crash whole or not at all: one file, or one SQLite transaction.

Checkpoints, kickoff outputs and flow states are read back after the process that wrote them died,
often because it died. A plain `open(path, "w")` can leave a torn file that fails to load (crewai's
JsonProvider does); SQLite's `jsonb()` needs 3.45 where Debian 12 ships 3.40. Everything mnemic
keeps on disk beside Chroma goes through these two helpers instead.

- `write_atomic`: a temp file in the same directory, fsync, `os.replace`, then fsync of the
  directory, so after a crash the path holds the old bytes or the new ones, never a mix.
- `connect_sqlite`: WAL, `synchronous=FULL`, `secure_delete` (deleted rows are overwritten, so an
  erased user's bytes do not linger in free pages), a busy timeout for several processes, and plain
  JSON text (no `jsonb`), so SQLite 3.40 works. Wrap writes in `with connection:` (one transaction).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

SQLITE_BUSY_TIMEOUT_MS = 10_000


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in `directory` durable (a no-op where directories cannot be opened)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows: renames are durable once os.replace returns
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def write_atomic(path: str | Path, data: bytes | str, *, mode: int = 0o600) -> Path:
    """Replace `path` with `data` so that a crash at any point leaves the old file or the new one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(payload)
            temp.flush()
            os.fsync(temp.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_directory(target.parent)
    return target


def remove_durably(path: str | Path) -> bool:
    """Unlink `path` (True if it existed) and make the removal durable."""
    target = Path(path)
    try:
        target.unlink()
    except FileNotFoundError:
        return False
    fsync_directory(target.parent)
    return True


def connect_sqlite(path: str | Path, *, check_same_thread: bool = False) -> sqlite3.Connection:
    """A connection set up for crash-safe, multi-process use and for erasure that erases."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(target, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
                                 check_same_thread=check_same_thread, isolation_level=None)
    connection.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    connection.execute("PRAGMA secure_delete = ON")
    # isolation_level=None plus explicit BEGIN makes `with transaction(connection)` one transaction
    # even for DDL, which the sqlite3 module's implicit transactions leave out.
    return connection


# SQLITE_CORRUPT (FTS5's SQLITE_CORRUPT_VTAB shares its low byte) and SQLITE_NOTADB.
_CORRUPTION_CODES = frozenset({11, 26})


def is_corruption(error: BaseException) -> bool:
    """Whether `error` says an SQLite file is damaged or not a database at all (rather than busy,
    locked or full): "database disk image is malformed", "file is not a database"."""
    if not isinstance(error, sqlite3.DatabaseError):
        return False
    code = getattr(error, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in _CORRUPTION_CODES
    text = str(error).lower()
    return "malformed" in text or "not a database" in text


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection, *, immediate: bool = True) -> Iterator[sqlite3.Connection]:
    """`with transaction(conn):` runs its statements in one transaction (committed, or rolled back
    on any exception). IMMEDIATE takes the write lock up front, so two processes never deadlock
    upgrading read locks."""
    connection.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def scrub_sqlite(connection: sqlite3.Connection) -> None:
    """After an erasure: fold the WAL back into the database and truncate it, so the erased rows'
    old page images are not left in the -wal file (secure_delete already zeroed the freed pages)."""
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

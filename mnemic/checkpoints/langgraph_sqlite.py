"""`SqliteCheckpointSaver`: LangGraph checkpoints in one SQLite file, for any number of processes.

    from mnemic.checkpoints import SqliteCheckpointSaver

    saver = SqliteCheckpointSaver("./.mnemic/threads.sqlite", memory=memory)
    graph = builder.compile(checkpointer=saver)
    graph.invoke(inputs, {"configurable": {"thread_id": "t1", "user_id": "alice"}})

The layout follows LangGraph's own SqliteSaver (a `checkpoints` table holding each checkpoint
whole, a `writes` table keyed by (thread, namespace, checkpoint, task, index)) plus a `threads`
table that records each thread's user. Every table carries `user_id`, so the namespace's
`RetainedPlace`s (registered when `memory=` is given) let `memory.forget(user_id=...)`, from any
process, delete the user's threads. Each call is one transaction (`BEGIN IMMEDIATE`, WAL, full
sync, secure_delete: see `mnemic.core.durable`); there is no `jsonb()`, so SQLite 3.40 works.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.durable import connect_sqlite, scrub_sqlite, transaction
from ..core.retention import RetainedPlace
from ..core.store import owner_key
from .langgraph_rows import (
    CheckpointRow,
    Ref,
    WriteRow,
    corrupt,
    owner_after_write,
)
from .langgraph_saver import (
    CHECKPOINTS_LABEL,
    THREADS_LABEL,
    WRITES_LABEL,
    LangGraphSaver,
)
from .owners import retain_once

if TYPE_CHECKING:
    from langgraph.checkpoint.base import SerializerProtocol

    from ..core.memory import Memory

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS threads (
        thread_id TEXT PRIMARY KEY,
        user_id TEXT,
        created_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        parent_checkpoint_id TEXT,
        user_id TEXT,
        run_id TEXT,
        type TEXT NOT NULL,
        checkpoint BLOB NOT NULL,
        metadata_type TEXT NOT NULL,
        metadata BLOB NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))""",
    """CREATE TABLE IF NOT EXISTS writes (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        task_path TEXT NOT NULL DEFAULT '',
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        user_id TEXT,
        type TEXT NOT NULL,
        value BLOB NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))""",
    "CREATE INDEX IF NOT EXISTS checkpoints_by_run ON checkpoints (run_id)",
    "CREATE INDEX IF NOT EXISTS checkpoints_by_user ON checkpoints (user_id)",
    "CREATE INDEX IF NOT EXISTS writes_by_user ON writes (user_id)",
    "CREATE INDEX IF NOT EXISTS threads_by_user ON threads (user_id)",
)
_ROW_COLUMNS = ("thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, user_id, run_id, "
                "type, checkpoint, metadata_type, metadata")
_PARAMS_PER_QUERY = 500


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class SqliteCheckpointSaver(LangGraphSaver):
    """A LangGraph checkpointer on a SQLite file (see the module docstring); sync and async.

    `memory=` registers the file with that Memory's namespace, so `memory.forget(user_id=...)`
    deletes the user's threads (reported as "threads", "thread_checkpoints" and "thread_writes").
    """

    def __init__(self, path: str | Path, *, memory: Memory | None = None,
                 serde: SerializerProtocol | None = None, user_key: str = "user_id") -> None:
        super().__init__(serde=serde, user_key=user_key)
        self.path = Path(path).expanduser().resolve()
        self._conn = connect_sqlite(self.path)
        with transaction(self._conn):
            for statement in _SCHEMA:
                self._conn.execute(statement)
        for place in self.retained_places() if memory is not None else ():
            retain_once(memory, place)

    def __repr__(self) -> str:
        return f"SqliteCheckpointSaver({str(self.path)!r})"

    def __enter__(self) -> SqliteCheckpointSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def retained_places(self) -> list[RetainedPlace]:
        """Where this saver keeps users' data, as `Memory.retain` takes it."""
        return [RetainedPlace(label=THREADS_LABEL, kind="sqlite", path=str(self.path), tables=("threads",)),
                RetainedPlace(label=CHECKPOINTS_LABEL, kind="sqlite", path=str(self.path), tables=("checkpoints",)),
                RetainedPlace(label=WRITES_LABEL, kind="sqlite", path=str(self.path), tables=("writes",))]

    # -- storage primitives -------------------------------------------------------------------------

    def _refs(self, thread_id: str | None, checkpoint_ns: str | None, *, owner: str | None = None) -> list[Ref]:
        where, params = [], []
        if owner is not None:
            where.append("user_id = ?")
            params.append(owner)
        if thread_id is not None:
            where.append("thread_id = ?")
            params.append(thread_id)
        if checkpoint_ns is not None:
            where.append("checkpoint_ns = ?")
            params.append(checkpoint_ns)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._conn.execute(f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints{clause}", params)
        return [Ref(cid, (tid, ns, cid)) for tid, ns, cid in rows]

    def _thread_owner(self, thread_id: str) -> str | None:
        found = self._conn.execute("SELECT user_id FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
        return owner_key(found[0]) if found and found[0] is not None else None

    def _where(self, row: CheckpointRow) -> str:
        return f"table 'checkpoints' of {self.path}"

    def _row(self, ref: Ref) -> CheckpointRow | None:
        found = self._conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            ref.locator).fetchone()
        if not found:
            return None
        try:
            return _checkpoint_row(found)
        except (TypeError, ValueError) as exc:  # a body column that is not a blob
            tid, ns, cid = ref.locator
            raise corrupt("the checkpoint", f"table 'checkpoints' of {self.path}", exc, thread_id=tid,
                          checkpoint_ns=ns, checkpoint_id=cid) from exc

    def _writes(self, row: CheckpointRow) -> list[WriteRow]:
        found = self._conn.execute(
            "SELECT task_id, task_path, idx, channel, type, value FROM writes "
            "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
            (row.thread_id, row.checkpoint_ns, row.checkpoint_id))
        try:
            return [WriteRow(task_id=t, task_path=p, idx=i, channel=c, value=(kind, bytes(v)))
                    for t, p, i, c, kind, v in found]
        except (TypeError, ValueError) as exc:  # a value column that is not a blob
            raise corrupt("the pending writes", f"table 'writes' of {self.path}", exc, thread_id=row.thread_id,
                          checkpoint_ns=row.checkpoint_ns, checkpoint_id=row.checkpoint_id) from exc

    def _claim(self, thread_id: str, user: str | None) -> str | None:
        """Check and record the thread's owner inside the caller's transaction."""
        found = self._conn.execute("SELECT user_id FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
        owner = owner_after_write(thread_id, found[0] if found else None, found is not None, user)
        if found is None:
            self._conn.execute("INSERT INTO threads (thread_id, user_id, created_at) VALUES (?, ?, ?)",
                               (thread_id, owner, _now()))
        elif found[0] is None and owner is not None:
            for table in ("threads", "checkpoints", "writes"):
                self._conn.execute(f"UPDATE {table} SET user_id = ? WHERE thread_id = ?", (owner, thread_id))
        return owner

    def _save(self, row: CheckpointRow) -> None:
        with transaction(self._conn):
            owner = self._claim(row.thread_id, row.user_id)
            self._insert_checkpoint(row, owner)

    def _insert_checkpoint(self, row: CheckpointRow, owner: str | None) -> None:
        self._conn.execute(
            f"INSERT OR REPLACE INTO checkpoints ({_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row.thread_id, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id, owner, row.run_id,
             row.checkpoint[0], row.checkpoint[1], row.metadata[0], row.metadata[1]))

    def _insert_writes(self, key: tuple[str, str, str], owner: str | None, writes: Sequence[WriteRow],
                       verb: str) -> None:
        self._conn.executemany(
            f"INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, "
            "channel, user_id, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*key, w.task_id, w.task_path, w.idx, w.channel, owner, w.value[0], w.value[1]) for w in writes])

    def _save_writes(self, row_key: tuple[str, str, str], user: str | None, writes: list[WriteRow],
                     replace_existing: bool) -> None:
        with transaction(self._conn):
            owner = self._claim(row_key[0], user)
            self._insert_writes(row_key, owner, writes, "REPLACE" if replace_existing else "IGNORE")

    def _remove_thread(self, thread_id: str) -> None:
        with transaction(self._conn):
            for table in ("writes", "checkpoints", "threads"):
                self._conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
        scrub_sqlite(self._conn)

    def _remove(self, refs: Sequence[Ref]) -> None:
        with transaction(self._conn):
            for table in ("writes", "checkpoints"):
                self._conn.executemany(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    [ref.locator for ref in refs])

    def _insert_thread(self, rows: Sequence[tuple[CheckpointRow, list[WriteRow]]], owner: str | None) -> None:
        with transaction(self._conn):
            self._claim(rows[0][0].thread_id, owner)
            for row, writes in rows:
                self._insert_checkpoint(row, owner)
                self._insert_writes((row.thread_id, row.checkpoint_ns, row.checkpoint_id), owner, writes, "REPLACE")

    def _run_refs(self, run_ids: set[str]) -> list[Ref]:
        wanted = sorted(run_ids)
        refs: list[Ref] = []
        for start in range(0, len(wanted), _PARAMS_PER_QUERY):
            chunk = wanted[start:start + _PARAMS_PER_QUERY]
            rows = self._conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                f"WHERE run_id IN ({', '.join('?' * len(chunk))})", chunk)
            refs.extend(Ref(cid, (tid, ns, cid)) for tid, ns, cid in rows)
        return refs


def _checkpoint_row(found: sqlite3.Row | tuple[Any, ...]) -> CheckpointRow:
    tid, ns, cid, parent, user, run, kind, body, meta_kind, meta = found
    return CheckpointRow(thread_id=tid, checkpoint_ns=ns, checkpoint_id=cid, parent_checkpoint_id=parent,
                         user_id=user, run_id=run, checkpoint=(kind, bytes(body)), metadata=(meta_kind, bytes(meta)))


__all__ = ["SqliteCheckpointSaver"]

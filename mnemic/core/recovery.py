"""What opening a store does before it serves, and what `Memory.repair()` does on demand.

Every open finishes a collection rebuild a crash interrupted (see store/upkeep.py), moves the
audit trail of an embedded store written by an older mnemic out of Chroma into the local database,
and brings the keyword index in line with Chroma.

An embedded store also remembers whether it was closed: a row in the local database says it is
open, and `close()` removes it. Finding the row on open means the last process died with the
store open, and then the checks a crash calls for run in full: every record against the keyword
index (not only those changed since its watermark), every user's vector index for records no
query can reach, which are rebuilt, and the checks of the namespace's other parts (`also`: the
knowledge store finishes a removal the crash cut short). `repair()` runs them always.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence

import numpy as np

from .lexical_sync import LexicalSync
from .local_db import LocalDatabase
from .local_history import LocalHistory
from .store import ChromaStore, upkeep
from .store.history import ChromaHistory

log = logging.getLogger("mnemic")

_SCHEMA = ("CREATE TABLE IF NOT EXISTS open_handles "
           "(token TEXT PRIMARY KEY, namespace TEXT NOT NULL, pid INTEGER NOT NULL, opened_at REAL NOT NULL)")
# Which process wrote an open mark: its pid is not enough, since a process started after a crash
# can get the dead one's pid (in a container the agent is pid 1 on every start).
_PROCESS_COLUMN = "ALTER TABLE open_handles ADD COLUMN process TEXT"


def _new_process_key() -> str:
    return f"{os.getpid()}-{uuid.uuid4().hex}"


_process_key = _new_process_key()


def _renew_process_key() -> None:
    global _process_key
    _process_key = _new_process_key()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_process_key)


class Recovery:
    def __init__(self, *, store: ChromaStore, local: LocalDatabase, sync: LexicalSync, namespace: str,
                 embed: Callable[[Sequence[str]], np.ndarray], dimension: Callable[[], int],
                 local_history: LocalHistory | None, also: Callable[[], int] | None = None) -> None:
        self._store = store
        self._local = local
        self._sync = sync
        self._namespace = namespace
        self._embed = embed
        self._dimension = dimension
        self._local_history = local_history  # embedded mode: the trail lives in the local database
        self._also = also
        self._token = uuid.uuid4().hex
        with local.lock:
            local.connection.execute(_SCHEMA)
            columns = {row[1] for row in local.connection.execute("PRAGMA table_info(open_handles)")}
            if "process" not in columns:
                local.connection.execute(_PROCESS_COLUMN)

    def on_open(self) -> int:
        """Returns how many keyword entries and records were repaired."""
        upkeep.finish_interrupted_rebuilds(self._store)
        if self._local_history is not None:
            self._move_history_out_of_chroma(self._local_history)
        no_trail = self._local_history is not None and self._local.persistent and self._local_history.is_empty()
        crashed = self._mark_open()
        if not crashed:
            reindexed = self._sync.repair()
            if no_trail and reindexed:
                self._warn_lost_trail(reindexed)
            return reindexed
        log.warning("namespace %r was not closed by the last process that opened it; checking it in full",
                    self._namespace)
        mended = self.repair()
        # Only now: a crash during the repair leaves the mark for the next open to find.
        self._local.execute("DELETE FROM open_handles WHERE namespace = ? AND process IS NOT ?",
                            (self._namespace, _process_key))
        return mended

    def _warn_lost_trail(self, reindexed: int) -> None:
        """Every change writes an audit entry in the local database, so Chroma records with no
        entry and no keyword row mean the file was deleted, emptied or replaced since they were
        written. The keyword index is rebuilt; what else the file held is gone, and said so once,
        on the open that finds it (the rebuild makes the next open find nothing to re-index)."""
        log.warning(
            "namespace %r: the local database %s held neither the keyword index nor the audit trail of the "
            "%d record(s) Chroma holds: it was deleted, emptied or replaced since they were written. The "
            "keyword index was rebuilt from Chroma; the audit trail of their earlier changes (history()) is "
            "gone, and so are any statements remember_many() had accepted and not yet stored. A copy of the "
            "old file, if one was kept, still holds them.", self._namespace, self._local.path, reindexed)

    def repair(self) -> int:
        """Full checks: the local database's pages, the keyword index against every record, and the
        vector index of every user."""
        self._local.check_integrity()
        changed = self._sync.repair(full=True)
        for user_id in self._store.users():
            missing = upkeep.unreachable_ids(self._store, user_id, self._dimension())
            if missing:
                log.warning("%d record(s) of a user were missing from the vector index; rebuilding it", len(missing))
                upkeep.rebuild_user(self._store, user_id, self._embed)
                still = upkeep.unreachable_ids(self._store, user_id, self._dimension())
                if still:  # keyword search still finds them; say so rather than loop
                    log.warning("%d record(s) stay unreachable by vector after a rebuild", len(still))
                changed += len(missing) - len(still)
        if self._also is not None:
            changed += self._also()
        return changed

    def on_close(self) -> None:
        if self._local.persistent:
            self._local.execute("DELETE FROM open_handles WHERE token = ?", (self._token,))

    def _mark_open(self) -> bool:
        """Record that this object has the namespace open; True when a process that is gone had
        it open and never closed it (the path lock keeps every other live process out, and other
        Memory objects of this process are not a crash)."""
        if not self._local.persistent:
            return False
        with self._local.transaction() as connection:
            # A mark without a process key was written by an older mnemic: never by this process.
            crashed = connection.execute("SELECT 1 FROM open_handles WHERE namespace = ? AND process IS NOT ?",
                                         (self._namespace, _process_key)).fetchone() is not None
            connection.execute(
                "INSERT INTO open_handles(token, namespace, pid, opened_at, process) VALUES (?, ?, ?, ?, ?)",
                (self._token, self._namespace, os.getpid(), time.time(), _process_key))
        return crashed

    def _move_history_out_of_chroma(self, local: LocalHistory) -> None:
        """A store written by an older mnemic kept its trail in Chroma (one more Chroma write per
        change). Copy it into the local database, then drop the collection; a crash in between
        copies again (entries are keyed by id) and drops it on the next open."""
        chroma = ChromaHistory(self._store)
        entries = chroma.all_entries()
        if self._store.history_collection(create=False) is None:
            return
        for start in range(0, len(entries), 5000):
            local.add(entries[start:start + 5000])
        self._store.drop_history()
        log.info("moved %d audit entries of namespace %r into the local database", len(entries), self._namespace)

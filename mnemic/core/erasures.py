"""When each user was last erased, kept where every process of a namespace reads it.

`remember_many()` acknowledges a statement before it is stored: it waits in this process's queue
and journal (`queued_writes.py`). `forget(user_id=...)` empties them in the process that runs it,
but against a Chroma server another process may hold the user's statements in its own queue, or
in the journal it replays on its next open, and would store them after the erasure: the user
back, with data they asked to have erased. So an erasure is marked in the namespace's settings
(shared through Chroma), and a statement accepted before the mark is dropped, never stored. The
mark names the user by `owner_key` (a hash), not by id.

In one process, several Memory objects may hold one namespace (two objects on one path), each with
its own queue and record lock. A queued batch checks the mark and is written under the namespace's
`ErasureOrder`, and an erasure sets the mark under it: an erasure through one object then falls
either before the check (the statement is dropped) or after the write (the erasure finds it),
never between them.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Sequence

from .records import MemoryRecord
from .store import ChromaStore, owner_key

log = logging.getLogger("mnemic")

_PREFIX = "erased:"


def mark_erased(store: ChromaStore, user_id: str) -> float:
    """Record that `user_id` is being erased now; returns the time recorded."""
    moment = time.time()
    store.put_setting(_PREFIX + owner_key(user_id), moment)
    return moment


def erased_at(store: ChromaStore, user_id: str) -> float | None:
    """When `user_id` was last erased (seconds since the epoch), or None."""
    value = store.get_setting(_PREFIX + owner_key(user_id))
    return float(value) if isinstance(value, (int, float)) else None


def accepted_before_erasure(store: ChromaStore, user_id: str, accepted: list[float | None]) -> list[bool]:
    """Per statement (by the time it was accepted; None for a journal entry older than this
    record), whether an erasure of its user came after it."""
    erased = erased_at(store, user_id)
    return [erased is not None and when is not None and when <= erased for when in accepted]


class ErasureOrder:
    """Held by a queued write from its mark check to its write, and by an erasure while it sets
    the mark. Taken before the record lock (see RecordLock), never inside it: a write holds it and
    then locks records; an erasure holds nothing else while it waits for it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> ErasureOrder:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


_orders: weakref.WeakValueDictionary[tuple[Hashable, str], ErasureOrder] = weakref.WeakValueDictionary()
_orders_guard = threading.Lock()


def erasure_order(database: Hashable, namespace: str) -> ErasureOrder:
    """The one ErasureOrder of `namespace` in `database` (an embedded path, or a client) in this
    process, shared by every Memory object on it while any holds it."""
    with _orders_guard:
        order = _orders.get((database, namespace))
        if order is None:
            order = ErasureOrder()
            _orders[(database, namespace)] = order
        return order


class ErasureGuard:
    """What a write accepted earlier (a queued statement, an observed turn) does about its user's
    erasure, and what the erasure does in turn. Both hold the namespace's ErasureOrder: the
    erasure while it sets the mark, the write from its last check to its write. Against a Chroma
    server other processes share no order, so there a write is checked again once it has landed
    and undone if its user was erased meanwhile: the erasure's mark came before that check, or
    its scan, which follows its mark, comes after the write and finds it."""

    def __init__(self, store: ChromaStore, order: ErasureOrder, *, other_processes: bool,
                 erase: Callable[[str, list[str]], None]) -> None:
        self._store = store
        self.order = order
        self._other_processes = other_processes  # a Chroma server: processes share no order
        self._erase = erase  # erases records of a user by id

    def mark(self, user_id: str) -> None:
        """The user is being erased: what was accepted for them before now is not written."""
        with self.order:
            mark_erased(self._store, user_id)

    def dropped(self, user_id: str, accepted: list[float | None]) -> list[bool]:
        """Per statement of the user (by when it was accepted), whether an erasure came after it."""
        return accepted_before_erasure(self._store, user_id, accepted)

    def erased_since(self, user_id: str, accepted: float) -> bool:
        return self.dropped(user_id, [accepted])[0]

    def undo_if_erased(self, user_id: str, accepted: float, stored: Sequence[MemoryRecord]) -> bool:
        """After a write accepted at `accepted`: whether another process erased the user meanwhile,
        in which case what was written has been erased. Call it under `order`."""
        if not self._other_processes or not stored or not self.erased_since(user_id, accepted):
            return False
        log.warning("erasing %d record(s) written while their user was being erased by another process", len(stored))
        try:
            self._erase(user_id, [record.id for record in stored])
        except Exception as exc:  # the writes stand; said loudly rather than lost in the batch's failure
            log.error("could not erase records written after their user's erasure: %s", exc)
        return True

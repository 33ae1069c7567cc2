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

import threading
import time
import weakref
from collections.abc import Hashable

from .store import ChromaStore, owner_key

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


def erased_since(store: ChromaStore, user_id: str, accepted: float) -> bool:
    """Whether the user was erased after `accepted` (a time.time() when a statement was accepted)."""
    return accepted_before_erasure(store, user_id, [accepted])[0]


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

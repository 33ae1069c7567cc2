"""Chroma's calls and mnemic's own work on Chroma's files never overlap within one process.

Erasure scrubs an embedded store's files itself (store/upkeep.py: VACUUM of `chroma.sqlite3`, a
read of its write log, zeroing unused HNSW space). Chroma reaches the same files through its Rust
bindings, which carry their own copy of SQLite: two copies of SQLite in one process do not see
each other's locks (POSIX locks belong to the process, and closing either copy's handle drops the
other's), which SQLite documents as a way to corrupt a database. A `forget()` in one thread while
another thread recalled did exactly that: "database disk image is malformed", store lost.

So every call into an embedded store's Chroma client holds its path's gate shared (many at once),
and the file work holds it exclusively (it waits for the calls in flight and holds new ones back).
The gate is per path and process-wide, as Chroma's client is (Memory objects of several namespaces
on one path share one Chroma system). A server owns its files: its clients are not wrapped.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class FileGate:
    """A readers-writer lock: Chroma calls are the readers, file work the writer. A waiting writer
    holds new readers back (a steady stream of recalls must not starve an erasure); a thread
    already inside a call may enter again."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0
        self._local = threading.local()

    @contextmanager
    def shared(self) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._condition:
                while self._writing or self._writers_waiting:
                    self._condition.wait()
                self._readers += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._condition:
                    self._readers -= 1
                    if self._readers == 0:
                        self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        if getattr(self._local, "depth", 0):
            raise RuntimeError("file work on a Chroma store was started from inside a Chroma call")
        with self._condition:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._condition.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._condition:
                self._writing = False
                self._condition.notify_all()


_gates: dict[Path, FileGate] = {}
_gates_guard = threading.Lock()


def gate_for(chroma_path: Path) -> FileGate:
    key = Path(chroma_path).resolve()
    with _gates_guard:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = FileGate()
        return gate


def _fresh_gates_after_fork() -> None:
    # A lock held by another thread at fork time would stay held in the child forever.
    global _gates_guard
    _gates_guard = threading.Lock()
    _gates.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_gates_after_fork)


class _Gated:
    """`inner` with every method call made under the gate's shared side; what a call returns that
    is itself a Chroma client object (a collection) is wrapped the same way."""

    __slots__ = ("_gate", "_inner")

    def __init__(self, inner: Any, gate: FileGate) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_gate", gate)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value
        return self._guarded(value)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def __eq__(self, other: object) -> bool:
        return self._inner == (other._inner if isinstance(other, _Gated) else other)

    def __hash__(self) -> int:
        return hash(self._inner)

    def __repr__(self) -> str:
        return f"gated {self._inner!r}"

    def _guarded(self, method: Callable[..., Any]) -> Callable[..., Any]:
        gate = self._gate

        def call(*args: Any, **kwargs: Any) -> Any:
            with gate.shared():
                result = method(*args, **kwargs)
            return _wrap(result, gate)

        return call


def _wrap(result: Any, gate: FileGate) -> Any:
    if _is_collection(result):
        return _Gated(result, gate)
    if isinstance(result, list) and result and all(_is_collection(item) for item in result):
        return [_Gated(item, gate) for item in result]
    return result


_collection_type: type | None = None


def _is_collection(value: Any) -> bool:
    global _collection_type
    if _collection_type is None:
        from chromadb.api.models.Collection import Collection

        _collection_type = Collection
    return isinstance(value, _collection_type)


def gated_client(client: Any, chroma_path: Path) -> Any:
    """`client` (a PersistentClient on `chroma_path`) with every call made under the path's gate."""
    return _Gated(client, gate_for(chroma_path))

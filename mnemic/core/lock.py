"""One writer per embedded store path.

Chroma silently loses vectors when two processes write one PersistentClient path, so an embedded
store holds an exclusive OS lock on a file in its directory for as long as it is open. The lock
is released by the OS when the process dies, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt
else:
    import fcntl

LOCK_FILE = "mnemic.lock"


class StoreLockedError(RuntimeError):
    """Another process has this embedded store open."""


class StoreLock:
    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._handle: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if sys.platform == "win32":  # pragma: no cover
                msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)
            else:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(handle)
            os.close(handle)
            raise StoreLockedError(
                f"the embedded store at {self.path.parent} is already open in another process{holder}. "
                "Chroma loses vectors when two processes write one embedded path. Close the other "
                "process, or run a Chroma server (`chroma run --path DIR --port 8000`) and connect every "
                "process to it with Memory(client=chromadb.HttpClient(host='localhost', port=8000))."
            ) from None
        os.ftruncate(handle, 0)
        os.write(handle, str(os.getpid()).encode())
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        try:
            if sys.platform != "win32":
                fcntl.flock(self._handle, fcntl.LOCK_UN)
        finally:
            os.close(self._handle)
            self._handle = None

    def disown(self) -> None:
        """Forget an inherited descriptor without unlocking it (the lock is another process's)."""
        if self._handle is not None:
            os.close(self._handle)
            self._handle = None

    @property
    def held(self) -> bool:
        return self._handle is not None


def _read_holder(handle: int) -> str:
    try:
        pid = os.pread(handle, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


class _SharedLock:
    """A process-wide handle on one path's lock: Memory objects of one process share it."""

    def __init__(self, key: Path, lock: StoreLock) -> None:
        self.key = key
        self.lock = lock
        self.users = 0
        # This hold of the OS lock: what the process read from the store while holding it stays
        # true until it lets go (another process may write the store between two holds).
        self.hold = uuid.uuid4().hex

    def release(self) -> None:
        with _registry_guard:
            self.users -= 1
            if self.users <= 0:
                self.lock.release()
                _registry.pop(self.key, None)


_registry: dict[Path, _SharedLock] = {}
_registry_guard = threading.Lock()


def _drop_inherited_locks() -> None:
    """In a child made by fork: the parent's locks are not the child's. The child shares the
    parent's lock file description, so it skipped the OS lock and opened Chroma beside its parent
    (whose Rust runtime does not survive a fork: it hung). Each inherited descriptor is closed
    without unlocking (that would unlock the parent's store), so the child asks the OS afresh and
    gets StoreLockedError while the parent holds the store."""
    global _registry_guard
    _registry_guard = threading.Lock()  # may have been held by another thread at the fork
    for shared in _registry.values():
        shared.lock.disown()
    _registry.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_inherited_locks)


def acquire_store_lock(directory: Path) -> _SharedLock:
    """Lock `directory` for this process. Several Memory objects (namespaces) in one process may
    share an embedded path; a second process may not."""
    key = directory.resolve()
    with _registry_guard:
        shared = _registry.get(key)
        if shared is None:
            lock = StoreLock(key)
            lock.acquire()
            shared = _SharedLock(key, lock)
            _registry[key] = shared
        shared.users += 1
        return shared

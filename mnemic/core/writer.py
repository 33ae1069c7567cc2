"""A single background writer: callers hand it work and return at once.

One worker keeps writes in submission order (a later fact can reconcile against an earlier one).
`drain()` is the read barrier: it returns when everything submitted before it has finished.
A failed job never kills the worker or the caller who queued it (that caller has returned): it is
logged and kept until someone asks with `take_failures()`, so `Memory.drain_writes()` and
`Memory.close()` can tell the program that what it queued was not stored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("mnemic.writer")


@dataclass(frozen=True)
class WriteFailure:
    description: str
    error: BaseException


class BackgroundWriteError(RuntimeError):
    """Writes queued for the background writer failed; what they carried was not stored."""

    def __init__(self, failures: Sequence[WriteFailure]) -> None:
        self.failures = list(failures)
        first = self.failures[0]
        more = f" (and {len(self.failures) - 1} more failed writes)" if len(self.failures) > 1 else ""
        super().__init__(
            f"a background write failed and was not stored: {first.description}{more}. "
            f"Cause: {type(first.error).__name__}: {first.error}. Nothing stored before it was lost; "
            "queue the same input again once the cause is fixed."
        )


class BackgroundWriter:
    def __init__(self, name: str = "mnemic-writer") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._failures: list[WriteFailure] = []

    def submit(self, job: Callable[[], Any], description: str = "a queued write") -> Future[Any]:
        with self._lock:
            if self._closed:
                raise RuntimeError("this Memory is closed; open a new one to write")
            future = self._executor.submit(self._run, job, description)
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def _run(self, job: Callable[[], Any], description: str) -> Any:
        try:
            return job()
        except BaseException as exc:  # a background failure must not vanish silently
            log.exception("background memory write failed: %s", description)
            with self._lock:
                self._failures.append(WriteFailure(description, exc))
            return None

    def take_failures(self) -> list[WriteFailure]:
        """The failures since the last call, oldest first; each is reported once."""
        with self._lock:
            failures, self._failures = self._failures, []
        return failures

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def drain(self, timeout: float | None = None) -> None:
        if threading.current_thread().name.startswith("mnemic-writer"):
            return  # a job that reads must not wait for itself
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            future.result(timeout=timeout)

    @property
    def busy(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def close(self) -> None:
        self.drain()
        with self._lock:
            self._closed = True
        self._executor.shutdown(wait=True)

"""A single background writer: callers hand it work and return at once.

One worker keeps writes in submission order (a later fact can reconcile against an earlier one).
`drain()` is the read barrier: it returns when everything submitted before it has finished.
A failed job never kills the worker or the caller who queued it (that caller has returned): it is
logged and kept until someone asks with `take_failures()`, so `Memory.drain_writes()` and
`Memory.close()` can tell the program that what it queued was not stored.

Batched submissions coalesce: items queued with `submit_batched` join the last queued batch while
it has not started, carries the same key, and nothing else was queued after it. An agent that
queues one fact at a time then gets the cost of one embedding call, one store query and one write
per batch instead of per fact, and the order of writes is unchanged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("mnemic.writer")

# A batch stops growing here, so one failure never takes more than this many queued items with it.
MAX_BATCH_ITEMS = 256


@dataclass
class _OpenBatch:
    key: Hashable
    items: list[Any]
    describe: Callable[[list[Any]], str]
    started: bool = False


@dataclass(frozen=True)
class WriteFailure:
    description: str
    error: BaseException


class PartialBatchFailure(Exception):
    """Raised by a batch runner when only some of its items failed: those are what was lost."""

    def __init__(self, items: Sequence[Any], cause: BaseException) -> None:
        super().__init__(str(cause))
        self.items = list(items)
        self.cause = cause


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


class LockOrderError(RuntimeError):
    """A wait for queued writes was made while holding a lock those writes need (it would hang)."""


class BackgroundWriter:
    def __init__(self, name: str = "mnemic-writer", *, must_not_hold: Callable[[], bool] | None = None) -> None:
        # Says whether the calling thread holds a lock that queued jobs take (see RecordLock):
        # waiting for them then would never end, so such a wait raises instead.
        self._must_not_hold = must_not_hold
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: set[Future[Any]] = set()
        # Reentrant: a future that is already done runs its callback (which locks) on the spot.
        self._lock = threading.RLock()
        self._closed = False
        self._failures: list[WriteFailure] = []
        self._open: _OpenBatch | None = None

    def submit(self, job: Callable[[], Any], description: str = "a queued write") -> Future[Any]:
        with self._lock:
            self._open = None  # what is queued after this job must not run before it
            return self._submit_locked(lambda: self._run(job, description))

    def _submit_locked(self, call: Callable[[], Any]) -> Future[Any]:
        if self._closed:
            raise RuntimeError("this Memory is closed; open a new one to write")
        future = self._executor.submit(call)
        self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def submit_batched(self, key: Hashable, items: Sequence[Any], run: Callable[[list[Any]], Any],
                       describe: Callable[[list[Any]], str]) -> None:
        """Queue `items` for `run(items)`, joining the last queued batch when that keeps order."""
        with self._lock:
            batch = self._open
            if (batch is not None and not batch.started and batch.key == key
                    and len(batch.items) + len(items) <= MAX_BATCH_ITEMS):
                batch.items.extend(items)
                return
            batch = _OpenBatch(key=key, items=list(items), describe=describe)
            self._open = batch
            self._submit_locked(lambda: self._run_batch(batch, run))

    def _run_batch(self, batch: _OpenBatch, run: Callable[[list[Any]], Any]) -> Any:
        with self._lock:
            batch.started = True  # no item joins it from here on
            if self._open is batch:
                self._open = None
            items = list(batch.items)
        try:
            return run(items)
        except PartialBatchFailure as partial:
            self._record_failure(batch.describe(partial.items), partial.cause)
        except BaseException as exc:  # a background failure must not vanish silently
            self._record_failure(batch.describe(items), exc)
        return None

    def _run(self, job: Callable[[], Any], description: str) -> Any:
        try:
            return job()
        except BaseException as exc:  # a background failure must not vanish silently
            self._record_failure(description, exc)
            return None

    def _record_failure(self, description: str, error: BaseException) -> None:
        log.error("background memory write failed: %s", description, exc_info=error)
        with self._lock:
            self._failures.append(WriteFailure(description, error))

    def take_failures(self) -> list[WriteFailure]:
        """The failures since the last call, oldest first; each is reported once."""
        with self._lock:
            failures, self._failures = self._failures, []
        return failures

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def _check_may_wait(self) -> None:
        if self._must_not_hold is not None and self._must_not_hold():
            raise LockOrderError(
                "mnemic lock order broken: waited for queued writes while holding the record lock "
                "(the writes need that lock, so this would hang). Drain first, then lock.")

    def result(self, future: Future[Any], timeout: float | None = None) -> Any:
        """Wait for a queued job's result (under the same rule as `drain`)."""
        self._check_may_wait()
        return future.result(timeout)

    def drain(self, timeout: float | None = None) -> None:
        if threading.current_thread().name.startswith("mnemic-writer"):
            return  # a job that reads must not wait for itself
        self._check_may_wait()
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

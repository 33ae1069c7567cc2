"""A single background writer: callers hand it work and return at once.

One worker keeps writes in submission order (a later fact can reconcile against an earlier one).
`drain()` is the read barrier: it returns when everything submitted before it has finished.
A failed job is logged and kept in `errors`; it never kills the worker or the caller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

log = logging.getLogger("mnemic.writer")


class BackgroundWriter:
    def __init__(self, name: str = "mnemic-writer") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: set[Future[Any]] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.errors: list[BaseException] = []

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        with self._lock:
            if self._closed:
                raise RuntimeError("this Memory is closed; open a new one to write")
            future = self._executor.submit(self._run, job)
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def _run(self, job: Callable[[], Any]) -> Any:
        try:
            return job()
        except BaseException as exc:  # a background failure must not vanish silently
            log.exception("background memory write failed")
            self.errors.append(exc)
            return None

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

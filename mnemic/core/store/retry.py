"""Retry Chroma calls that fail for a moment and then succeed.

A Chroma server under concurrent writers can answer a query on a collection another process is
still writing with `InternalError: Error creating hnsw segment reader: Nothing found on disk`
until its segment is flushed; a read by id that meets a record another thread deleted meanwhile
fails with `Internal error: Error finding id` (asked again, the record is simply gone); an HTTP
client can meet a dropped connection or a timeout. Each of these succeeds when asked again. Every
call mnemic makes is safe to repeat: reads change nothing, `upsert`, `update` and `delete` are by
id, and `get_or_create_collection` is idempotent.

Anything else (bad input, a missing collection, a dimension mismatch) is raised at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("mnemic.store")

# Waits between attempts, in seconds: about 3 s in all before the error is raised.
BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)

_TRANSIENT_MESSAGES = (
    "nothing found on disk",
    "error creating hnsw segment reader",
    "error loading hnsw index",
    "database is locked",
    "error finding id",
)
_TRANSIENT_TYPES = ("ConnectError", "ReadTimeout", "WriteTimeout", "PoolTimeout", "RemoteProtocolError",
                    "ReadError", "ConnectTimeout")


def is_transient(exc: BaseException) -> bool:
    if type(exc).__name__ in _TRANSIENT_TYPES:
        return True
    message = str(exc).lower()
    return any(fragment in message for fragment in _TRANSIENT_MESSAGES)


def call_with_retry(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    for wait in (*BACKOFF_S, None):
        try:
            return call(*args, **kwargs)
        except Exception as exc:
            if wait is None or not is_transient(exc):
                raise
            log.warning("chroma call %s failed (%s); retrying in %.2f s",
                        getattr(call, "__name__", "?"), exc, wait)
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


class RetryingCollection:
    """A Chroma collection whose calls retry transient failures; everything else passes through."""

    _RETRIED = frozenset({"add", "upsert", "update", "delete", "get", "query", "count", "peek"})

    def __init__(self, collection: Any) -> None:
        self._collection = collection

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._collection, attribute)
        if attribute in self._RETRIED and callable(value):
            return lambda *args, **kwargs: call_with_retry(value, *args, **kwargs)
        return value


class RetryingClient:
    """A Chroma client whose calls retry transient failures and hand out retrying collections."""

    _COLLECTION_FACTORIES = frozenset({"get_collection", "get_or_create_collection", "create_collection"})
    _RETRIED = frozenset({"list_collections", "delete_collection", "heartbeat"})

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(self._client, attribute)
        if not callable(value):
            return value
        if attribute in self._COLLECTION_FACTORIES:
            return lambda *args, **kwargs: RetryingCollection(call_with_retry(value, *args, **kwargs))
        if attribute in self._RETRIED:
            return lambda *args, **kwargs: call_with_retry(value, *args, **kwargs)
        return value


def retrying(client: Any) -> Any:
    return client if isinstance(client, RetryingClient) else RetryingClient(client)

"""The stores LangGraph's store tests run against, how each is built, and where each differs."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.langgraph import MnemicStore

STORES = ("mnemic", "inmemory", "sqlite")

_NO_TTL = "InMemoryStore has no TTL support (its constructor takes no ttl)"
_SQLITE_INTERNALS = "reads SqliteStore's own tables through store.conn"
_ASYNC_SWEEP = ("calls `await store.sweep_ttl()` / `start_ttl_sweeper()` as AsyncSqliteStore's coroutines; "
                "MnemicStore is one class for sync and async like InMemoryStore: sweep_ttl() is sync and "
                "asweep_ttl() is its async twin")
_SQLITE_NO_ASYNC = "SqliteStore has no async methods (AsyncSqliteStore is a separate class)"
_NO_EXTENSIONS = ("this Python's sqlite3 cannot load extensions, so SqliteStore cannot load sqlite-vec for "
                  "vector search (Debian's python3 can; pyenv builds without --enable-loadable-sqlite-extensions)")
CAN_LOAD_EXTENSIONS = hasattr(sqlite3.connect(":memory:"), "enable_load_extension")

# (module, test, store) -> why that store fails that test
KNOWN_DIFFERENCES: dict[tuple[str, str, str], str] = {}


def _known(module: str, test: str, stores: tuple[str, ...], reason: str) -> None:
    for store in stores:
        KNOWN_DIFFERENCES[(module, test, store)] = reason


for _test in ("test_ttl_basic", "test_ttl_refresh", "test_ttl_sweeper", "test_ttl_custom_value",
              "test_ttl_override_default", "test_search_with_ttl", "test_async_ttl_basic", "test_async_ttl_refresh",
              "test_async_ttl_sweeper", "test_async_search_with_ttl", "test_async_asearch_refresh_ttl"):
    _known("test_lg_sqlite_ttl", _test, ("inmemory",), _NO_TTL)
for _test in ("test_async_ttl_basic", "test_async_ttl_refresh", "test_async_ttl_sweeper", "test_async_search_with_ttl",
              "test_async_asearch_refresh_ttl"):
    _known("test_lg_sqlite_ttl", _test, ("mnemic",), _ASYNC_SWEEP)
_known("test_lg_postgres_store", "test_store_ttl", ("inmemory",), _NO_TTL)
_known("test_lg_sqlite_ttl", "test_ttl_override_default", ("mnemic",),
       "LangGraph's TTLConfig documents refresh_on_read as True when not configured, and MnemicStore follows "
       "it: the test's get() at 2 s restarts item2's 5 s lifetime, so item2 is still there at 6 s. SqliteStore "
       "treats an unset refresh_on_read as False.")
_known("test_lg_sqlite_store", "test_sql_injection_vulnerability", ("mnemic", "inmemory"),
       "expects ValueError('Invalid filter key') for a key with quotes; filters here never reach SQL, so any "
       "string is a field name that simply matches nothing")
_known("test_lg_sqlite_store", "test_filter_keys_with_hyphens_and_digits", ("inmemory",),
       "InMemoryStore has no dotted-path filters")
for _module in ("test_lg_sqlite_store", "test_lg_postgres_store"):
    _known(_module, "test_search", ("inmemory",),
           "InMemoryStore finds nothing for a namespace prefix given as a list (search(['test']))")
_known("test_lg_postgres_store", "test_basic_store_ops", ("sqlite",),
       "SqliteStore keeps timestamps to the second, so updated_at does not grow within a second")
_known("test_lg_sqlite_store", "test_vector_store_initialization", ("mnemic", "inmemory"), _SQLITE_INTERNALS)
for _test in ("test_cannot_put_empty_namespace", "test_async_vector_insert_with_auto_embedding",
              "test_async_vector_update_with_embedding", "test_async_vector_search_with_filters",
              "test_async_vector_search_pagination", "test_embed_with_path"):
    _known("test_lg_checkpoint_store", _test, ("sqlite",), _SQLITE_NO_ASYNC)
if not CAN_LOAD_EXTENSIONS:
    for _test in ("test_vector_store_initialization", "test_vector_insert_with_auto_embedding",
                  "test_vector_update_with_embedding", "test_vector_search_with_filters",
                  "test_vector_search_pagination", "test_non_ascii", "test_async_batched_vector_search_concurrent"):
        _known("test_lg_checkpoint_store", _test, ("sqlite",), _NO_EXTENSIONS)
    for _test in ("test_vector_store_initialization", "test_vector_insert_with_auto_embedding",
                  "test_vector_update_with_embedding", "test_vector_search_with_filters",
                  "test_vector_search_pagination", "test_vector_search_edge_cases", "test_embed_with_path",
                  "test_embed_with_path_operation_config", "test_scores", "test_basic_store_operations",
                  "test_list_namespaces_operations", "test_search_items", "test_non_ascii"):
        _known("test_lg_sqlite_store", _test, ("sqlite",), _NO_EXTENSIONS)
    for _test in ("test_vector_store_initialization", "test_vector_insert_with_auto_embedding",
                  "test_vector_update_with_embedding", "test_vector_search_with_filters",
                  "test_vector_search_pagination", "test_vector_search_edge_cases", "test_embed_with_path_sync",
                  "test_embed_with_path_operation_config", "test_scores", "test_non_ascii"):
        _known("test_lg_postgres_store", _test, ("sqlite",), _NO_EXTENSIONS)



def _sqlite_index(index: dict[str, Any] | None) -> dict[str, Any] | None:
    if index is None:
        return None
    config = {k: v for k, v in index.items() if k != "fields"}
    if index.get("fields") is not None:
        config["text_fields"] = index["fields"]  # SqliteStore's name for the same setting
    return config


class StoreFactory:
    """Builds the store under test; the only thing the copied tests do differently. Stores built
    by a test are closed when it ends."""

    def __init__(self, kind: str, directory: Path) -> None:
        self.kind = kind
        self.directory = directory
        self.count = 0
        self.closing = contextlib.ExitStack()

    def _path(self, name: str) -> Path:
        self.count += 1
        return self.directory / f"{name}{self.count}"

    def __call__(self, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None,
                 ttl_required: bool = True) -> Any:
        """`ttl_required=False`: the test's ttl is incidental, so a store without TTLs gets none."""
        if self.kind == "inmemory":
            if ttl is not None and ttl_required:
                raise NotImplementedError(_NO_TTL)
            return InMemoryStore(index=index)  # type: ignore[arg-type]
        if self.kind == "sqlite":
            store = self.closing.enter_context(SqliteStore.from_conn_string(
                str(self._path("sqlite")), index=_sqlite_index(index), ttl=ttl))  # type: ignore[arg-type]
            store.setup()
            return store
        embed = (index or {}).get("embed")
        memory = self.closing.enter_context(
            Memory(self._path("mnemic"), embedder=embed if isinstance(embed, Embeddings) else HashEmbedder()))
        mnemic = MnemicStore(memory, index=index, ttl=ttl, scores="cosine")  # type: ignore[arg-type]
        self.closing.callback(mnemic.stop_ttl_sweeper, 5)
        return mnemic

    @contextlib.asynccontextmanager
    async def make_async(self, *, ttl: dict[str, Any] | None = None) -> AsyncIterator[Any]:
        """The store an async test builds: AsyncSqliteStore for SqliteStore, the same class otherwise."""
        if self.kind == "sqlite":
            async with AsyncSqliteStore.from_conn_string(str(self._path("asqlite")), ttl=ttl) as store:  # type: ignore[arg-type]
                await store.setup()
                yield store
        else:
            yield self(ttl=ttl)



"""LangGraph's own store tests, run against MnemicStore, InMemoryStore and SqliteStore.

The test modules here are copies of LangGraph's store tests (MIT, notice at the top of each) with
only the store construction changed: where a test built an InMemoryStore, SqliteStore or
PostgresStore, it asks `make_store` (`make_store.make_async` for AsyncSqliteStore) for one
(lg_stores.StoreFactory), and every test runs once per store. MnemicStore is built as a LangGraph
user would build it for LangGraph's semantics: `MnemicStore(Memory(dir, embedder=<the test's
embeddings>), index=<the test's index>, ttl=<the test's ttl>, scores="cosine")`.

A test a store fails is listed in `lg_stores.KNOWN_DIFFERENCES` with the reason, and marked a
strict xfail for that store, so every run shows each difference and a fix (or a new failure)
shows up at once. `bench/langgraph_store_suite.py` runs this suite and prints the pass count per
store.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.sqlite")

from lg_embeddings import CharacterEmbeddings
from lg_stores import KNOWN_DIFFERENCES, STORES, StoreFactory

# The reference stores' real-time TTL tests (a minute of sleeping, flaky for SqliteStore, which
# keeps expiry to the second) guard nothing of mnemic's, so the test suite runs them for
# MnemicStore only; bench/langgraph_store_suite.py sets this to run them for every store.
EVERY_STORE_ENV = "MNEMIC_STORE_SUITE_EVERY_STORE"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    every_store = os.environ.get(EVERY_STORE_ENV) == "1"
    for item in items:
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get("store_kind") if callspec else None
        if kind is None:
            continue
        flaky = item.get_closest_marker("flaky")
        if flaky is not None and "retries" in flaky.kwargs:
            # LangGraph marks with pytest-retry's spelling; pytest-rerunfailures reruns with fresh fixtures.
            item.add_marker(pytest.mark.flaky(reruns=int(flaky.kwargs["retries"])), append=False)
        if kind != "mnemic" and item.get_closest_marker("slow") is not None and not every_store:
            item.add_marker(pytest.mark.skip(reason=f"{kind}: a reference store's real-time TTL test; "
                                                    "bench/langgraph_store_suite.py runs it"))
            continue
        module = Path(str(item.fspath)).stem
        reason = KNOWN_DIFFERENCES.get((module, item.originalname, kind))  # type: ignore[attr-defined]
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"{kind}: {reason}"))


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_dir(tmp_path: Path) -> Iterator[Path]:
    """tmpfs when there is one: Chroma syncs every write, and these tests make thousands."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="mnemic-lgsuite-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_store(store_kind: str, store_dir: Path) -> Iterator[StoreFactory]:
    factory = StoreFactory(store_kind, store_dir)
    with factory.closing:
        yield factory

"""Chroma failing for a moment costs nothing; a write that really fails is reported, never dropped silently."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from chromadb.errors import InternalError

import mnemic.core.store.retry as retry_module
from mnemic import BackgroundWriteError, HashEmbedder, Memory
from mnemic.core.identity import user_key

# What a Chroma server answered in CI while three processes wrote to one collection.
HNSW_RACE = "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"


@dataclass
class Faults:
    """How many more times each collection method fails, and with what."""

    failures: dict[str, int]
    error: type[Exception] = InternalError
    message: str = HNSW_RACE


class FlakyCollection:
    """A real collection whose methods named in `faults` fail while their count lasts."""

    def __init__(self, collection: Any, faults: Faults) -> None:
        self._collection = collection
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._collection, name)
        if name not in self._faults.failures:
            return value

        def flaky(*args: Any, **kwargs: Any) -> Any:
            if self._faults.failures[name] > 0:
                self._faults.failures[name] -= 1
                raise self._faults.error(self._faults.message)
            return value(*args, **kwargs)

        return flaky


class FlakyClient:
    """A real client whose users' record collections are flaky (bookkeeping collections are not)."""

    def __init__(self, client: Any, failures: dict[str, int], error: type[Exception] = InternalError,
                 message: str = HNSW_RACE) -> None:
        self._client = client
        self._faults = Faults(failures, error, message)
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._client, name)
        if name in {"get_collection", "get_or_create_collection"}:
            def wrapped(collection_name: str, *args: Any, **kwargs: Any) -> Any:
                found = value(collection_name, *args, **kwargs)
                return FlakyCollection(found, self._faults) if "-m-" in collection_name else found
            return wrapped
        return value


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry_module, "BACKOFF_S", (0.0, 0.0, 0.0))


def _client(tmp_path: Path) -> Any:
    return chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))


def test_a_transient_chroma_error_is_retried_and_nothing_is_lost(tmp_path: Path) -> None:
    flaky = FlakyClient(_client(tmp_path), {"query": 2, "upsert": 2})
    with Memory(client=flaky, namespace="t", embedder=HashEmbedder()) as memory:
        memory.remember("Seed fact so later writes query a non-empty collection.", user_id="u")
        memory.remember_many([f"queued fact number {i}" for i in range(20)], user_id="u")
        memory.drain_writes()
        assert len(memory.list(user_id="u", limit=100)) == 21
        assert flaky.failures == {"query": 0, "upsert": 0}  # the failures did happen, and were absorbed
        assert memory.recall("queued fact number 7", user_id="u")[0].record.text == "queued fact number 7"


def test_a_lasting_failure_is_raised_by_drain_writes_once_and_the_memory_stays_usable(tmp_path: Path) -> None:
    flaky = FlakyClient(_client(tmp_path), {"upsert": 0})
    with Memory(client=flaky, namespace="t", embedder=HashEmbedder()) as memory:
        kept = memory.remember("The billing address is in Porto.", user_id="u")
        assert kept is not None
        flaky.failures["upsert"] = 100  # more than the retries
        memory.remember_many(["Queued fact one.", "Queued fact two."], user_id="u")
        with pytest.raises(BackgroundWriteError) as raised:
            memory.drain_writes()
        assert "2 statement(s) for a user (key " in str(raised.value) and "from remember_many()" in str(raised.value)
        assert "Nothing found on disk" in str(raised.value)
        assert len(raised.value.failures) == 1
        memory.drain_writes()  # reported once
        flaky.failures["upsert"] = 0
        assert [r.id for r in memory.list(user_id="u")] == [kept.id]
        memory.remember_many(["Queued fact one."], user_id="u")
        memory.drain_writes()
        assert len(memory.list(user_id="u")) == 2


def test_an_unreported_failure_is_raised_by_close(tmp_path: Path) -> None:
    flaky = FlakyClient(_client(tmp_path), {"upsert": 100})
    memory = Memory(client=flaky, namespace="t", embedder=HashEmbedder())
    memory.remember_many(["A fact that cannot be stored."], user_id="u")
    with pytest.raises(BackgroundWriteError, match="1 statement"):
        memory.close()


def test_a_non_transient_error_is_not_retried(tmp_path: Path) -> None:
    flaky = FlakyClient(_client(tmp_path), {"upsert": 1}, error=ValueError, message="bad embedding dimension")
    with Memory(client=flaky, namespace="t", embedder=HashEmbedder()) as memory:
        with pytest.raises(ValueError, match="bad embedding dimension"):
            memory.remember("A fact.", user_id="u")
        # One failure was scripted: had the call been retried, remember() would have succeeded.
        memory.remember("A fact.", user_id="u")
        assert memory.recall("fact", user_id="u")


def test_a_read_barrier_does_not_raise_a_queued_failure_into_recall(tmp_path: Path) -> None:
    flaky = FlakyClient(_client(tmp_path), {"upsert": 100})
    memory = Memory(client=flaky, namespace="t", embedder=HashEmbedder())
    try:
        memory.remember_many(["A fact that cannot be stored."], user_id="u")
        assert memory.recall("fact", user_id="u") == []  # an agent's read is not the place to fail
        with pytest.raises(BackgroundWriteError):
            memory.drain_writes()
    finally:
        memory.close()


def test_one_users_failed_write_costs_other_users_queued_in_the_same_batch_nothing(tmp_path: Path) -> None:
    flaky = FlakyClient(_client(tmp_path), {"upsert": 0})
    with Memory(client=flaky, namespace="t", embedder=HashEmbedder()) as memory:
        memory.remember("Seed so both collections exist.", user_id="ana")
        memory.remember("Seed so both collections exist.", user_id="bo")
        release = threading.Event()
        memory._writer.submit(release.wait)  # hold the writer so the next writes share one batch
        memory.remember_many(["Ana fact one."], user_id="ana")
        memory.remember_many(["Bo fact one."], user_id="bo")
        memory.remember_many(["Ana fact two."], user_id="ana")
        original = memory._store.add

        def refuse_ana(user_id: str, rows: Any) -> None:
            if user_id == "ana":
                raise OSError("disk quota exceeded for ana")
            original(user_id, rows)

        memory._store.add = refuse_ana  # type: ignore[method-assign]
        release.set()
        with pytest.raises(BackgroundWriteError) as raised:
            memory.drain_writes()
        memory._store.add = original  # type: ignore[method-assign]
        assert f"2 statement(s) for a user (key {user_key('ana')})" in str(raised.value)
        assert "quota" in str(raised.value)
        assert sorted(r.text for r in memory.list(user_id="bo")) == ["Bo fact one.", "Seed so both collections exist."]

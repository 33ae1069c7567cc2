"""Two writers on one store (two Memory objects on one path, or two processes on a Chroma server):
a change built on a read that another writer has since overtaken is not written over it. The
record lock covers one Memory object only, and a reconcile can wait seconds on an LLM, so without
the check a fact invalidated meanwhile came back as valid, with no trace in its history."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemic import ConcurrentChangeError, Memory
from mnemic.core.embeddings import HashEmbedder

BOAT = "I own a sailing boat named Rex."


@pytest.fixture
def two_writers(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    first = Memory(tmp_path / "m", embedder=HashEmbedder())
    second = Memory(tmp_path / "m", embedder=HashEmbedder())
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def served(memory: Memory, query: str) -> list[str]:
    return [m.record.text for m in memory.recall(query, user_id="alice") if m.record.state == "valid"]


def test_a_merge_does_not_bring_back_a_fact_invalidated_while_the_llm_reconciled(
        two_writers: tuple[Memory, Memory]) -> None:
    first, second = two_writers
    boat = first.remember(BOAT, user_id="alice")
    first.remember("Rex is a sailing boat I own with my brother.", user_id="alice")  # related: the LLM is asked
    asked: list[int] = []

    def reconciling_llm(messages: Any, schema: Any = None) -> str:
        if not asked:
            second.invalidate(boat.id, reason="sold the boat")
        asked.append(1)
        return "not json: the conservative rules decide"

    first.llm = reconciling_llm
    first.remember(BOAT, user_id="alice")  # said again: a merge into the record read before the LLM call
    assert asked, "the scenario needs the reconcile call"
    assert first.get(boat.id).state == "invalid" and second.get(boat.id).state == "invalid"
    assert [h.action for h in second.history(boat.id)][:2] == ["add", "invalidate"]
    assert "merge" not in [h.action for h in second.history(boat.id)]


def test_an_update_built_on_a_stale_read_is_refused_and_the_invalidation_stands(
        two_writers: tuple[Memory, Memory]) -> None:
    first, second = two_writers
    manager = first.remember("Alice's manager is Tom Baker.", user_id="alice")
    real = first.embedder

    class InvalidatingWhileEmbedding:
        name, dimension = real.name, real.dimension

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if any("ext. 42" in t for t in texts):
                second.invalidate(manager.id, reason="Tom left")
            return real.embed(texts)

    first.embedder = InvalidatingWhileEmbedding()  # type: ignore[assignment]
    with pytest.raises(ConcurrentChangeError, match="read the record again"):
        first.update(manager.id, text="Alice's manager is Tom Baker (ext. 42).")
    assert second.get(manager.id).state == "invalid"
    assert served(second, "who is alice's manager") == []


def test_erasing_one_user_while_other_threads_read_and_write_leaves_the_store_whole(tmp_path: Path) -> None:
    # An erasure VACUUMs chroma.sqlite3 through Python's SQLite while Chroma's Rust SQLite, in the
    # same process, served other threads: the two copies of SQLite do not see each other's locks,
    # and the file ended "database disk image is malformed" (every user's memory lost).
    import sqlite3
    import threading

    errors: list[str] = []
    done = threading.Event()
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        for i in range(20):
            memory.remember(f"Bob fact {i}: the okapi eats leaves.", user_id="bob")

        def keep_going(step: Any) -> None:
            while not done.is_set():
                try:
                    step()
                except Exception as exc:  # every failure is the finding
                    errors.append(f"{type(exc).__name__}: {exc}")

        counter = iter(range(10**9))
        workers = [threading.Thread(target=keep_going, args=(lambda: memory.recall("okapi", user_id="bob"),)),
                   threading.Thread(target=keep_going, args=(lambda: memory.remember(
                       f"Bob fact {next(counter)} about leaves.", user_id="bob"),))]
        for worker in workers:
            worker.start()
        try:
            for n in range(12):
                memory.remember(f"Alice secret {n}.", user_id="alice")
                memory.forget(user_id="alice")
        finally:
            done.set()
            for worker in workers:
                worker.join()
        written = len(memory.list(user_id="bob", limit=100_000))
    assert errors == []
    with sqlite3.connect(f"file:{tmp_path / 'm' / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as again:
        assert len(again.list(user_id="bob", limit=100_000)) == written
        assert again.list(user_id="alice") == []


def test_a_recall_racing_the_erasure_of_its_user_answers_instead_of_failing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another thread's forget() dropped the user's collection while recall's query ran: Chroma
    # failed the query ("Missing metadata segment") and the error reached the caller.
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember("Alice drinks tea.", user_id="alice")
        original = Collection.query

        def dropped_meanwhile(self: Collection, *args: Any, **kwargs: Any) -> Any:
            monkeypatch.setattr(Collection, "query", original)
            self._client.delete_collection(self.name)
            raise InternalError("Missing field: [Missing metadata segment]")

        monkeypatch.setattr(Collection, "query", dropped_meanwhile)
        assert memory.recall("tea", user_id="alice") == []


def test_rows_caught_half_deleted_are_not_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Chroma can answer mid-deletion with an id whose metadata is already gone: decoding it
    # failed the whole recall (KeyError: 'user_id').
    from chromadb.api.models.Collection import Collection

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember("Alice drinks tea.", user_id="alice")
        memory.remember("Alice drinks green tea.", user_id="alice")
        original = Collection.query

        def half_deleted(self: Collection, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            result["metadatas"][0][0] = None
            return result

        monkeypatch.setattr(Collection, "query", half_deleted)
        assert len(memory.recall("tea", user_id="alice")) == 1


class HeldOnWord:
    """An embedder that holds any batch with `word` in it until released: a queued write caught
    between its erasure check and its write."""

    def __init__(self, word: str) -> None:
        import threading

        self.word, self.real = word, HashEmbedder()
        self.name, self.dimension = self.real.name, self.real.dimension
        self.embedding, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.word in t for t in texts):
            self.embedding.set()
            self.release.wait(10)
        return self.real.embed(texts)


def forget_while_the_write_waits(eraser: Memory, queuer: Memory, held: HeldOnWord) -> None:
    import threading

    assert held.embedding.wait(10), "the scenario needs the queued write under way"
    forgetting = threading.Thread(target=lambda: eraser.forget(user_id="alice"))
    forgetting.start()
    forgetting.join(0.5)  # unfixed, the erasure is over by now, before the write
    held.release.set()
    forgetting.join(10)
    queuer.drain_writes(10)
    assert not forgetting.is_alive()


def test_a_statement_queued_through_another_memory_object_is_not_stored_after_its_user_is_forgotten(
        two_writers: tuple[Memory, Memory]) -> None:
    # remember_many() acknowledged the statement through the second object; its writer had checked
    # that alice was not erased and was embedding when forget(user_id="alice") ran through the
    # first object. The two objects' locks were separate, so the erasure ran in between and the
    # statement was written after it: alice was back, with what she had asked to have erased.
    eraser, queuer = two_writers
    held = HeldOnWord("passport")
    queuer.embedder = held  # type: ignore[assignment]
    queuer.remember_many(["My passport number is kept in the blue folder."], user_id="alice")
    forget_while_the_write_waits(eraser, queuer, held)
    assert eraser.list(user_id="alice") == [] and queuer.list(user_id="alice") == []
    assert eraser.recall("passport", user_id="alice") == []


@pytest.fixture
def two_clients(tmp_path: Path) -> Iterator[Callable[..., tuple[Memory, Memory]]]:
    """Two Memory objects on one Chroma database through a client each (two services, or, with
    an erasure order each, two processes on a server): `open(writer_embedder, **writer_options)`
    gives (writer, eraser); both are closed afterwards."""
    import chromadb

    opened: list[Memory] = []

    def open_pair(embedder: HeldOnWord, **options: Any) -> tuple[Memory, Memory]:
        writer = Memory(client=chromadb.PersistentClient(path=str(tmp_path / "db")), embedder=embedder,
                        lexical_path=tmp_path / "one.sqlite3", **options)
        opened.append(writer)
        eraser = Memory(client=chromadb.PersistentClient(path=str(tmp_path / "db")), embedder=HashEmbedder(),
                        lexical_path=tmp_path / "two.sqlite3")
        opened.append(eraser)
        return writer, eraser

    yield open_pair
    for memory in opened:
        memory.close()


def as_two_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Processes share no erasure order: each Memory gets its own."""
    from mnemic.core import memory as memory_module
    from mnemic.core.erasures import ErasureOrder

    monkeypatch.setattr(memory_module, "erasure_order", lambda database, namespace: ErasureOrder())


def test_a_statement_queued_through_another_client_of_the_database_is_not_stored_after_forget(
        two_clients: Callable[..., tuple[Memory, Memory]]) -> None:
    # The erasure order was keyed by the client object: two services building a client each for
    # one database got a lock each, and a queued write landed after the other's forget().
    held = HeldOnWord("Elm")
    queuer, eraser = two_clients(held)
    queuer.remember_many(["I live at 12 Elm Street."], user_id="alice")
    forget_while_the_write_waits(eraser, queuer, held)
    assert eraser.list(user_id="alice") == []


def test_a_statement_another_process_was_writing_when_its_user_was_forgotten_is_erased(
        two_clients: Callable[..., tuple[Memory, Memory]], monkeypatch: pytest.MonkeyPatch) -> None:
    # Against a Chroma server two processes share no lock: the writer checked the mark, the other
    # process erased the user, and the write landed after it.
    as_two_processes(monkeypatch)
    held = HeldOnWord("Elm")
    queuer, eraser = two_clients(held)
    queuer.remember_many(["I live at 12 Elm Street."], user_id="alice")
    forget_while_the_write_waits(eraser, queuer, held)
    assert eraser.list(user_id="alice") == [] and queuer.list(user_id="alice") == []
    assert eraser.recall("Elm Street", user_id="alice") == []


def test_facts_another_process_was_writing_when_their_user_was_forgotten_are_erased(
        two_clients: Callable[..., tuple[Memory, Memory]], monkeypatch: pytest.MonkeyPatch) -> None:
    # The same race on an observed turn: its facts passed the check, then the write waited (here
    # on the embedder) while another process erased the user.
    from scripted_llm import ScriptedLLM, fact, facts_json

    as_two_processes(monkeypatch)
    held = HeldOnWord("Austin")
    observer, eraser = two_clients(
        held, policy="auto", llm=ScriptedLLM(default=facts_json(fact("Lives in Austin.", topic="personal_info"))))
    observer.observe([{"role": "user", "content": "I moved to Austin last year."}], user_id="alice")
    forget_while_the_write_waits(eraser, observer, held)
    assert eraser.list(user_id="alice") == [] and observer.list(user_id="alice") == []


def test_a_recall_meeting_a_record_deleted_meanwhile_answers_instead_of_failing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another thread deleted a record between the keyword index's answer and Chroma's read of it:
    # Chroma failed the read ("Error finding id", seen with threads deleting while others recall)
    # and the error reached the agent. Asked again, the read answers without the record.
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember("Alice drinks green tea.", user_id="alice")
        original, failed = Collection.get, []

        def deleted_meanwhile(self: Collection, *args: Any, **kwargs: Any) -> Any:
            if failed:
                return original(self, *args, **kwargs)
            failed.append(1)
            raise InternalError("Error executing plan: Internal error: Error finding id")

        monkeypatch.setattr(Collection, "get", deleted_meanwhile)
        assert [m.record.text for m in memory.recall("green tea", user_id="alice")] == ["Alice drinks green tea."]

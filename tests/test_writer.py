"""The background writer: queued facts coalesce into batches without changing the order of writes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from mnemic import HashEmbedder, Memory
from mnemic.core.writer import MAX_BATCH_ITEMS, BackgroundWriter


def _blocked_writer() -> tuple[BackgroundWriter, threading.Event]:
    writer = BackgroundWriter()
    release = threading.Event()
    writer.submit(release.wait)  # holds the worker so later submissions queue up
    return writer, release


def test_items_queued_behind_a_running_job_coalesce_into_one_batch() -> None:
    writer, release = _blocked_writer()
    runs: list[list[int]] = []
    for i in range(10):
        writer.submit_batched("alice", [i], runs.append, lambda items: f"{len(items)} items")
    release.set()
    writer.drain()
    assert runs == [list(range(10))]
    writer.close()


def test_a_batch_never_jumps_over_a_job_queued_after_it() -> None:
    writer, release = _blocked_writer()
    order: list[Any] = []
    writer.submit_batched("alice", ["a1"], lambda items: order.append(list(items)), str)
    writer.submit(lambda: order.append("observe"))
    writer.submit_batched("alice", ["a2"], lambda items: order.append(list(items)), str)
    writer.submit_batched("bob", ["b1"], lambda items: order.append(list(items)), str)
    writer.submit_batched("bob", ["b2"], lambda items: order.append(list(items)), str)
    release.set()
    writer.drain()
    assert order == [["a1"], "observe", ["a2"], ["b1", "b2"]]
    writer.close()


def test_a_batch_stops_growing_at_its_size_cap() -> None:
    writer, release = _blocked_writer()
    sizes: list[int] = []
    for i in range(MAX_BATCH_ITEMS + 5):
        writer.submit_batched("k", [i], lambda items: sizes.append(len(items)), str)
    release.set()
    writer.drain()
    assert sizes == [MAX_BATCH_ITEMS, 5]
    writer.close()


class GatedEmbedder(HashEmbedder):
    """Counts embedding calls; the first call waits for `gate` so writes pile up behind it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.first_call = threading.Event()

    def embed(self, texts: Any) -> np.ndarray:
        self.calls.append(len(texts))
        if len(self.calls) == 1:
            self.first_call.set()
            self.gate.wait(timeout=30)
        return super().embed(texts)


def test_facts_queued_one_at_a_time_are_embedded_and_reconciled_in_batches(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    with Memory(tmp_path / "m", embedder=embedder) as memory:
        memory.remember_many(["Alice lives in Paris."], user_id="alice")
        assert embedder.first_call.wait(timeout=30)  # the first batch is running: the rest pile up behind it
        for i in range(40):
            memory.remember_many([f"Alice's fact number {i}."], user_id="alice", session_id="s", turn=i + 1)
        memory.remember_many(["Alice lives in Paris."], user_id="alice")  # a repeat merges, as unbatched
        embedder.gate.set()
        memory.drain_writes()
        assert embedder.calls == [1, 41]
        records = memory.list(user_id="alice", limit=100)
        assert len(records) == 41
        assert sorted(r.turn for r in records if r.turn is not None) == list(range(1, 41))
        assert memory.stats.facts_merged == 1


def test_a_queued_statement_is_dated_when_it_is_written_not_when_it_was_accepted(tmp_path: Path) -> None:
    # Another process's keyword index reads what changed since its newest change: a statement
    # that waited in the queue and landed dated at its acceptance was never read by it (found by
    # an attack on a Chroma server: recall there never matched the statement's words).
    from mnemic.core.records import utcnow

    embedder = GatedEmbedder()
    with Memory(tmp_path / "m", embedder=embedder) as memory:
        memory.remember_many(["Alice lives in Paris."], user_id="alice")
        assert embedder.first_call.wait(timeout=30)
        (waiting,) = memory.remember_many(["Alice adopted a pterodactylium named Gus."], user_id="alice")
        accepted = utcnow()
        threading.Event().wait(0.3)
        released = utcnow()
        embedder.gate.set()
        memory.drain_writes()
        stored = memory.get(waiting)
        assert stored.created_at <= accepted < released <= stored.updated_at

"""One writer per embedded path, and nothing served wrongly after a crash between two writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mnemic import EmbedderMismatchError, Memory, StoreLockedError
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.lexical import LexicalIndex

OPEN_AND_HOLD = textwrap.dedent(
    """
    import sys, time
    from mnemic import Memory, HashEmbedder
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    print("open", flush=True)
    time.sleep(60)
    """
)


def _hold_in_subprocess(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", OPEN_AND_HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_a_second_process_is_refused_with_a_pointer_to_server_mode(store_path: Path) -> None:
    holder = _hold_in_subprocess(store_path)
    try:
        with pytest.raises(StoreLockedError) as error:
            Memory(store_path, embedder=HashEmbedder())
        message = str(error.value)
        assert str(holder.pid) in message
        assert "chroma run" in message and "HttpClient" in message
    finally:
        holder.kill()
        holder.wait()
    # The OS drops the lock with the process: no stale lock after a crash.
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("open again", user_id="u")


def test_one_process_may_open_several_namespaces_on_one_path(store_path: Path) -> None:
    with Memory(store_path, namespace="a", embedder=HashEmbedder()) as a:
        with Memory(store_path, namespace="b", embedder=HashEmbedder()) as b:
            b.remember("fine", user_id="u")
        a.remember("still fine", user_id="u")
    holder = _hold_in_subprocess(store_path)  # everything released once both closed
    holder.kill()
    holder.wait()


def test_crash_after_chroma_write_is_repaired_on_open(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("indexed normally", user_id="u")

        def crash(self: LexicalIndex, *args: object, **kwargs: object) -> None:
            raise OSError("simulated crash before the lexical index was written")

        monkeypatch.setattr(LexicalIndex, "upsert", crash)
        with pytest.raises(OSError):
            memory.remember("Quokka sightings are logged on Rottnest.", user_id="u")
        monkeypatch.undo()
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        matches = memory.recall("quokka", user_id="u")
        assert [m.record.text for m in matches] == ["Quokka sightings are logged on Rottnest."]
        assert "quokka" in matches[0].breakdown.matched_terms  # found by the repaired keyword index


def test_crash_before_the_record_landed_leaves_no_history_claim(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemic.core.store import ChromaStore

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        record = memory.remember("Ravi collects stamps.", user_id="ravi")
        assert record is not None

        def crash(self: ChromaStore, user_id: str, rows: object) -> None:
            raise OSError("simulated crash between the history entry and the record update")

        monkeypatch.setattr(ChromaStore, "replace_metadata", crash)
        with pytest.raises(OSError):
            memory.invalidate(record.id, reason="stopped collecting")
        monkeypatch.undo()
        assert memory.get(record.id).state == "valid"
        assert [h.action for h in memory.history(record.id)] == ["add"]
        assert memory.recall("stamps", user_id="ravi")


def test_stale_keyword_entries_never_serve_a_deleted_record(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        record = memory.remember("Walrus facts are fun.", user_id="u")
        assert record is not None
        # Remove the record behind the index's back, as a crash mid-delete would.
        memory._store.delete("u", [record.id])
        assert memory.recall("walrus", user_id="u") == []


KILL_WHILE_WRITING = textwrap.dedent(
    """
    import sys
    from mnemic import Memory, HashEmbedder
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    i = 0
    while True:
        memory.remember(f"Fact {i} about zebra number {i}.", user_id="u")
        if i == 5:
            print("writing", flush=True)
        i += 1
    """
)


def test_sigkill_mid_write_leaves_a_consistent_store(store_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", KILL_WHILE_WRITING, str(store_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        records = memory.list(user_id="u", limit=100_000)
        assert len(records) > 5
        for record in records[:20]:
            number = record.text.split()[1]
            matches = memory.recall(f"zebra {number}", user_id="u", limit=50)
            assert record.id in {m.record.id for m in matches}
            assert all(m.record.user_id == "u" for m in matches)


def test_a_namespace_refuses_a_different_embedder(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder(256)) as memory:
        memory.remember("x", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="mnemic/hash-256"):
        Memory(store_path, embedder=HashEmbedder(128))
    with Memory(store_path, embedder=HashEmbedder(256)) as memory:  # nothing was lost
        assert len(memory.list(user_id="u")) == 1

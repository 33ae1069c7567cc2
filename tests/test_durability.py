"""One writer per embedded path, and nothing served wrongly after a crash between two writes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mnemic import EmbedderMismatchError, Memory, StoreLockedError
from mnemic.core.embeddings import HashEmbedder

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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_is_refused_like_any_other_process(store_path: Path) -> None:
    # A child made by fork (multiprocessing's default on Linux, gunicorn --preload, celery prefork)
    # inherited the parent's record of holding the lock, skipped the OS lock and hung in Chroma.
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("the parent's fact", user_id="u")
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            signal.alarm(20)  # a hang ends the child with SIGALRM
            try:
                Memory(store_path, embedder=HashEmbedder())
            except StoreLockedError:
                os._exit(0)
            except BaseException:
                os._exit(2)
            os._exit(1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        memory.remember("the parent goes on", user_id="u")  # the child left the parent's lock alone
    holder = _hold_in_subprocess(store_path)  # and it is released when the parent closes
    holder.kill()
    holder.wait()


def test_one_process_may_open_several_namespaces_on_one_path(store_path: Path) -> None:
    with Memory(store_path, namespace="a", embedder=HashEmbedder()) as a:
        with Memory(store_path, namespace="b", embedder=HashEmbedder()) as b:
            b.remember("fine", user_id="u")
        a.remember("still fine", user_id="u")
    holder = _hold_in_subprocess(store_path)  # everything released once both closed
    holder.kill()
    holder.wait()


def test_a_record_the_keyword_index_lost_is_reindexed_on_open(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("indexed normally", user_id="u")
        record = memory.remember("Quokka sightings are logged on Rottnest.", user_id="u")
        assert record is not None
        # As if the local database had lost the row:
        memory._lexical.delete(memory._store.collection_name("u"), [record.id])
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        matches = memory.recall("quokka", user_id="u")
        assert [m.record.text for m in matches] == ["Quokka sightings are logged on Rottnest."]
        assert "quokka" in matches[0].breakdown.matched_terms  # found by the repaired keyword index


DIE_BEFORE_THE_CHROMA_WRITE = textwrap.dedent(
    """
    import os, sys
    from mnemic import Memory, HashEmbedder
    from mnemic.core.store import ChromaStore
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    memory.remember("indexed normally", user_id="u")
    ChromaStore.add = lambda self, user_id, rows: os._exit(9)  # dies after the local commit
    memory.remember("Quokka sightings are logged on Rottnest.", user_id="u")
    """
)


def test_a_crash_between_the_local_commit_and_chroma_leaves_nothing_claimed(store_path: Path) -> None:
    died = subprocess.run([sys.executable, "-c", DIE_BEFORE_THE_CHROMA_WRITE, str(store_path)], check=False)
    assert died.returncode == 9
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert [r.text for r in memory.list(user_id="u")] == ["indexed normally"]
        assert memory.recall("quokka", user_id="u") == []
        assert memory._lexical.coverage("quokka", user_id="u") == {}  # the stale row was repaired away


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


def _unreachable(memory: Memory, user_id: str) -> list[str]:
    """The user's records that a vector query for every record does not return."""
    import numpy as np

    collection = memory._store.user_collection(user_id, create=False)
    assert collection is not None
    ids = collection.get(include=[])["ids"]
    probe = np.zeros(memory.embedder.dimension, dtype=np.float32)
    probe[0] = 1.0
    found = set(collection.query(query_embeddings=[probe], n_results=len(ids), include=[])["ids"][0])
    return [i for i in ids if i not in found]


NEAR_DUPLICATES = [f"Fact {i} about zebra number {i}." for i in range(72)]


def test_near_duplicate_records_are_all_reachable_by_vector(store_path: Path) -> None:
    # Chroma's default graph left 10 of these 72 out of every vector query (they were in count()
    # and keyword search, never in a dense pool or a reconcile probe).
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        for text in NEAR_DUPLICATES:
            memory.remember(text, user_id="u")
        assert memory._store.count("u") == 72
        assert _unreachable(memory, "u") == []


def test_repair_rebuilds_a_vector_index_that_lost_records(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        # A collection as an older mnemic created it (Chroma's default graph).
        memory._store.client.create_collection(
            memory._store.collection_name("u"), embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"mnemic": "memory", "user_id": "u", "namespace": memory.namespace})
        for text in NEAR_DUPLICATES:
            memory.remember(text, user_id="u")
        assert _unreachable(memory, "u")  # the fault repair must mend
        assert memory.repair() > 0
        assert _unreachable(memory, "u") == []
        assert memory._store.count("u") == 72
        assert [m.record.text for m in memory.recall("Fact 7 about zebra number 7", user_id="u", limit=1)] \
            == ["Fact 7 about zebra number 7."]
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert _unreachable(memory, "u") == []
        assert len(memory.list(user_id="u", limit=100)) == 72


KILL_WHILE_REMEMBERING = textwrap.dedent(
    """
    import sys
    from mnemic import Memory, HashEmbedder
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    start = int(sys.argv[2])
    for i in range(start, start + 1000):
        record = memory.remember(f"Fact {i} about zebra number {i}.", user_id="u")
        print(record.id, flush=True)
    """
)


def test_after_sigkill_every_acknowledged_record_is_in_both_indexes(store_path: Path) -> None:
    acknowledged: list[str] = []
    for start in (0, 1000):
        proc = subprocess.Popen([sys.executable, "-c", KILL_WHILE_REMEMBERING, str(store_path), str(start)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        # Killed mid-remember, past the point where Chroma saves its index (100 writes), so the
        # reopened index is the one built one record at a time, where near-duplicates got lost.
        while len(acknowledged) < (130 if start == 0 else 170):
            acknowledged.append(proc.stdout.readline().strip())
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        acknowledged += out.split()
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        stored = {r.id for r in memory.list(user_id="u", limit=100_000)}
        assert set(acknowledged) <= stored
        assert _unreachable(memory, "u") == []
        for record_id in acknowledged[:: max(1, len(acknowledged) // 10)]:
            text = memory.get(record_id).text
            assert memory._lexical.coverage(text, user_id="u")  # in the keyword index too


QUEUE_UNTIL_KILLED = textwrap.dedent(
    """
    import sys
    from mnemic import Memory, HashEmbedder
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    call = 0
    while True:
        ids = memory.remember_many([f"Call {call} statement {j}: parcel {call}-{j} left depot {j}." for j in range(10)],
                                   user_id="u")
        print(" ".join(ids), flush=True)
        call += 1
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.4, 1.2])
def test_what_remember_many_acknowledged_survives_sigkill(store_path: Path, delay: float) -> None:
    # The full harness (30+ trials, also through a server): bench/bench_remember_many_kill.py.
    proc = subprocess.Popen([sys.executable, "-c", QUEUE_UNTIL_KILLED, str(store_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate()
    output = first + rest
    whole_lines = output.splitlines() if output.endswith("\n") else output.splitlines()[:-1]
    acknowledged = [record_id for line in whole_lines for record_id in line.split()]
    assert len(acknowledged) >= 10
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        stored = {r.id for r in memory.list(user_id="u", limit=100_000)}
        assert [i for i in acknowledged if i not in stored] == []
        assert memory.recall("parcel 0-3 left depot 3", user_id="u")[0].record.text.startswith("Call 0 statement 3")


def test_an_older_embedded_store_keeps_its_audit_trail(store_path: Path) -> None:
    from mnemic.core.store.history import ChromaHistory

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        record = memory.remember("Hana rides a green bicycle.", user_id="hana")
        assert record is not None
        memory.invalidate(record.id, reason="sold it")
        trail = [memory._records.history.for_record(record.id)]
        # As an older mnemic kept it: the trail in a Chroma collection, not in the local database.
        ChromaHistory(memory._store).add(trail[0])
        memory._records.history.clear()
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert [(h.action, h.reason) for h in memory.history(record.id)] == [("add", None), ("invalidate", "sold it")]
        assert memory._store.history_collection(create=False) is None  # moved out of Chroma


def test_a_long_backlog_acknowledged_before_a_crash_is_all_stored_on_open(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fast process can acknowledge thousands of statements before it is killed; the journal
    # replays them on open, in batches a store accepts (one query over 1,500 ids is refused).
    from mnemic.core.writer import BackgroundWriter

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember_many([f"Earlier note {i}: crate {i} waits at gate {i % 7}." for i in range(300)], user_id="u")
        memory.drain_writes()
        # The process "dies" before its writer runs: every acknowledged statement is only journaled.
        monkeypatch.setattr(BackgroundWriter, "submit_batched", lambda *args, **kwargs: None)
        acknowledged = memory.remember_many(
            [f"Call {c} statement {j}: parcel {c}-{j} left depot {j}." for c in range(150) for j in range(10)],
            user_id="u")
    monkeypatch.undo()
    assert len(acknowledged) == 1500
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        stored = {r.id for r in memory.list(user_id="u", limit=100_000)}
        assert [i for i in acknowledged if i not in stored] == []
    with Memory(store_path, embedder=HashEmbedder()) as memory:  # nothing left to replay twice
        assert len(memory.list(user_id="u", limit=100_000)) == 1800


def test_a_long_backlog_whose_records_landed_before_the_crash_is_not_written_twice(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Killed after the writer stored the batches but before their journal entries were retired.
    from mnemic.core.write_journal import WriteJournal

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        monkeypatch.setattr(WriteJournal, "done", lambda *args, **kwargs: None)
        acknowledged = memory.remember_many(
            [f"Call {c} statement {j}: parcel {c}-{j} left depot {j}." for c in range(150) for j in range(10)],
            user_id="u")
        memory.drain_writes()
    monkeypatch.undo()
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        records = memory.list(user_id="u", limit=100_000)
        assert sorted(r.id for r in records) == sorted(acknowledged)
        assert all(len(memory.history(r.id)) == 1 for r in records[:20])


DIE_BETWEEN_REPLACEMENT_AND_RETIREMENT = textwrap.dedent(
    """
    import os, signal, sys
    from mnemic import Memory, HashEmbedder
    from mnemic.core.write_pipeline import WritePipeline

    def die(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    WritePipeline._retire = die
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    how = sys.argv[2]
    if how == "remember_many":
        memory.remember_many(["The account manager is now Tom Baker."], user_id="acme")
        memory.drain_writes()
    elif how == "remember":
        memory.remember("The account manager is now Tom Baker.", user_id="acme")
    else:
        memory.confirm(sys.argv[3])
    """
)


@pytest.mark.parametrize("how", ["remember_many", "remember", "confirm"])
def test_a_replacement_stored_just_before_a_crash_still_retires_the_fact_it_replaces(store_path: Path,
                                                                                     how: str) -> None:
    # "X is now Y" writes the new record first and retires the old one after (a confirmed pending
    # fact likewise is made valid first): a crash between the two left both served as current for
    # good, whether the statement came through remember_many's journal, remember() or confirm().
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        old = memory.remember("The account manager is Anna Smith.", user_id="acme")
        pending = memory.remember("The account manager is now Tom Baker.", user_id="acme",
                                  source_kind="tool_result") if how == "confirm" else None
    child = subprocess.run([sys.executable, "-c", DIE_BETWEEN_REPLACEMENT_AND_RETIREMENT, str(store_path), how,
                            pending.id if pending else ""], capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        live = [r.text for r in memory.list(user_id="acme")]
        assert live == ["The account manager is now Tom Baker."]
        assert memory.get(old.id).state == "invalid"
        assert [m.record.text for m in memory.recall("who is the account manager", user_id="acme")] == live
        assert "Anna Smith" not in memory.profile("acme")


def test_a_store_deleted_and_made_again_at_the_same_path_in_one_process_works(store_path: Path) -> None:
    # Chroma keeps a system per path until its clients close: closing a Memory releases it, so the
    # new store is really new (it failed with chromadb's "unable to open database file").
    import shutil

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("I prefer tea over coffee.", user_id="alice")
    shutil.rmtree(store_path)
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("Bob likes jazz.", user_id="bob")
        assert [r.text for r in memory.list()] == ["Bob likes jazz."]


DIE_IN_AN_UPDATE = textwrap.dedent(
    """
    import os, sys, time
    from mnemic import Memory, HashEmbedder
    from mnemic.core.store import ChromaStore
    memory = Memory(sys.argv[1], embedder=HashEmbedder())
    record = memory.remember("Alice lives in Berlin near the old zoo.", user_id="u")
    time.sleep(1.5)  # older than the keyword index's watermark by the time of the update
    ChromaStore.replace_metadata = lambda self, user_id, rows: os._exit(9)  # after the local commit
    memory.update(record.id, text="Alice lives in Lisbon by the river.")
    """
)


def test_a_crash_is_checked_in_full_even_when_the_next_process_has_the_dead_ones_pid(store_path: Path) -> None:
    # The open mark was compared by pid: in a container the agent is pid 1 on every start, so after
    # a SIGKILL the next open took the dead process's mark for its own and skipped the full check.
    died = subprocess.run([sys.executable, "-c", DIE_IN_AN_UPDATE, str(store_path)], check=False)
    assert died.returncode == 9
    local = sqlite3.connect(store_path / "lexical.sqlite3")
    with local:  # as if this process had the dead one's pid
        local.execute("UPDATE open_handles SET pid = ?", (os.getpid(),))
    local.close()
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert memory.recall("Lisbon river", user_id="u") == []
        (match,) = memory.recall("Berlin zoo", user_id="u")
        assert {"berlin", "zoo"} <= set(match.breakdown.matched_terms)


DIE_BETWEEN_TWO_RETIREMENTS = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    from mnemic import Memory, HashEmbedder
    from mnemic.core.write_pipeline import WritePipeline
    from scripted_llm import ScriptedLLM, existing_aliases

    def decide(messages):
        known = existing_aliases(messages)
        if "Has a dog." in known and "Has a cat." in known:
            return json.dumps({"decisions": [{"fact": 1, "decision": "update", "reason": "pets changed",
                                              "targets": [known["Has a dog."], known["Has a cat."]]}]})
        return json.dumps({"decisions": [{"fact": 1, "decision": "insert", "targets": [], "reason": "new"}]})

    memory = Memory(sys.argv[1], embedder=HashEmbedder(), llm=ScriptedLLM(decide))
    retire, calls = WritePipeline._retire, []

    def die_on_the_second(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os._exit(9)
        return retire(self, *args, **kwargs)

    WritePipeline._retire = die_on_the_second
    memory.remember("Has a dog and a cat, both adopted in 2020.", user_id="alice")
    """
)


def test_a_crash_between_two_retirements_of_one_replacement_finishes_both(store_path: Path) -> None:
    # A replacement of two facts named only the first in `supersedes`: killed after retiring it,
    # the second stayed live beside its replacement for good.
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("Has a dog.", user_id="alice")
        memory.remember("Has a cat.", user_id="alice")
    child = subprocess.run([sys.executable, "-c", DIE_BETWEEN_TWO_RETIREMENTS, str(store_path),
                            str(Path(__file__).parent)], capture_output=True, text=True, timeout=120)
    assert child.returncode == 9, child.stderr
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert [r.text for r in memory.list(user_id="alice")] == ["Has a dog and a cat, both adopted in 2020."]

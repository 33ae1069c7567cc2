"""The same Memory API against a real Chroma server that the tests start (`chroma run`) and stop."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM, existing_aliases

import mnemic.core.lexical_sync as lexical_sync
from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        pytest.fail(f"the chroma CLI is missing at {chroma}: it ships with the chromadb package")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = open(data / "server.log", "w")  # noqa: SIM115 - closed in the fixture's teardown
    proc = subprocess.Popen([str(chroma), "run", "--path", str(data / "db"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.close()
                pytest.fail("chroma server did not start:\n" + (data / "server.log").read_text()[-2000:])
            time.sleep(0.2)
    try:
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _client(port: int):  # type: ignore[no-untyped-def]
    import chromadb
    from chromadb.config import Settings

    return chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False))


@pytest.fixture
def namespace(request: pytest.FixtureRequest) -> str:
    return "srv-" + request.node.name[-40:].replace("[", "-").replace("]", "")


def test_remember_recall_and_lifecycle_through_a_server(chroma_server: int, namespace: str) -> None:
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as memory:
        assert memory.mode == "client"
        kept = memory.remember("Server mode keeps the billing address in Porto.", user_id="alice")
        gone = memory.remember("Alice owns a red kayak.", user_id="alice")
        memory.remember("Bob's billing address is in Oslo.", user_id="bob")
        assert kept is not None and gone is not None
        memory.invalidate(gone.id, reason="sold")
        found = memory.recall("billing address", user_id="alice")
        assert [m.record.id for m in found] == [kept.id]
        assert memory.recall("kayak", user_id="alice") == []
        assert [h.action for h in memory.history(gone.id)] == ["add", "invalidate"]
        assert memory.forget(user_id="bob") == 1
        assert memory.recall("billing address", user_id="bob") == []


def test_erasing_a_replacement_takes_its_quote_out_of_the_shared_audit_trail(chroma_server: int,
                                                                          namespace: str) -> None:
    """On a server the trail is a Chroma collection: the retired fact's reason there loses its
    quote of the erased replacement too (an LLM's reason quotes what replaced the fact)."""
    def quoting(messages: list[dict[str, str]]) -> str:
        alias = existing_aliases(messages)["Lives in Austin."]
        return json.dumps({"decisions": [{"fact": 1, "decision": "invalidate", "targets": [alias],
                                          "reason": "moved: Lives in Zqxdenver."}]})

    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder(),
                llm=ScriptedLLM(quoting)) as memory:
        old = memory.remember("Lives in Austin.", user_id="alice")
        new = memory.remember("Lives in Zqxdenver.", user_id="alice")
        assert old is not None and new is not None
        assert "Zqxdenver" in (memory.history(old.id)[-1].reason or "")
        memory.delete(new.id)
        assert memory.get(old.id).invalidated_by == new.id
        assert "Zqxdenver" not in (memory.get(old.id).invalid_reason or "")
        assert all("Zqxdenver" not in (h.reason or "") for h in memory.history(old.id))


def test_a_second_client_sees_the_first_clients_writes(
        chroma_server: int, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_sync, "SERVER_SYNC_INTERVAL_S", 0.0)
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as reader:
        assert reader.recall("narwhal", user_id="u") == []
        with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as writer:
            record = writer.remember("The narwhal tusk is a tooth.", user_id="u")
            assert record is not None
        matches = reader.recall("narwhal", user_id="u")
        assert [m.record.id for m in matches] == [record.id]
        assert "narwhal" in matches[0].breakdown.matched_terms


WRITER = textwrap.dedent(
    """
    import sys
    import chromadb
    from chromadb.config import Settings
    from mnemic import Memory, HashEmbedder
    client = chromadb.HttpClient(host="127.0.0.1", port=int(sys.argv[1]),
                                 settings=Settings(anonymized_telemetry=False))
    with Memory(client=client, namespace=sys.argv[2], embedder=HashEmbedder()) as memory:
        memory.remember_many([f"writer {sys.argv[3]} fact {i}" for i in range(150)], user_id="shared-user")
    """
)


def test_several_processes_can_write_through_one_server(chroma_server: int, namespace: str) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(chroma_server), namespace, str(n)])
             for n in range(3)]
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as memory:
        assert len(memory.list(user_id="shared-user", limit=10_000)) == 450
        assert memory.recall("writer 2 fact 149", user_id="shared-user")[0].record.text == "writer 2 fact 149"


SAME_FACTS = textwrap.dedent(
    """
    import sys
    import chromadb
    from chromadb.config import Settings
    from mnemic import Memory, HashEmbedder
    client = chromadb.HttpClient(host="127.0.0.1", port=int(sys.argv[1]),
                                 settings=Settings(anonymized_telemetry=False))
    with Memory(client=client, namespace=sys.argv[2], embedder=HashEmbedder()) as memory:
        print("ready", flush=True)
        sys.stdin.readline()  # every writer starts at once
        for i in range(20):
            memory.remember(f"Shared fact number {i}: the depot opens at {i} o'clock.", user_id="shared-user")
    """
)


def test_processes_writing_the_same_facts_through_a_server_store_each_once(chroma_server: int, namespace: str) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", SAME_FACTS, str(chroma_server), namespace],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        assert proc.wait(timeout=300) == 0
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as memory:
        texts = [r.text for r in memory.list(user_id="shared-user", limit=1000)]
        assert sorted(texts) == sorted(f"Shared fact number {i}: the depot opens at {i} o'clock." for i in range(20))


def test_langgraph_hooks_never_inject_a_fact_another_client_invalidated(chroma_server: int, namespace: str) -> None:
    # The hooks reuse a user's profile until this process sees a change; a second client (another
    # process, in production) invalidating a fact is not such a change, and must not wait 30 s.
    pytest.importorskip("langgraph")
    from mnemic.integrations.langgraph import MemoryHooks

    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as agent_side:
        berlin = agent_side.remember("Alice lives in Berlin.", user_id="alice")
        agent_side.remember("Alice works as a nurse.", user_id="alice")
        hooks = MemoryHooks(agent_side, profile=True)
        assert "Berlin" in hooks.context_text("alice", None)
        with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as operator:
            operator.invalidate(berlin.id, reason="moved to Lisbon")
        context = hooks.context_text("alice", None)
        assert "Berlin" not in context and "nurse" in context


def test_langgraph_hooks_drop_a_fact_another_client_invalidated_during_the_turn(
        chroma_server: int, namespace: str) -> None:
    # A turn's context is reused for its later model calls until this process sees a change; a
    # second client invalidating a fact while a tool runs is not such a change.
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

    from mnemic.integrations.langgraph import CONTEXT_MESSAGE_ID, MemoryHooks

    def memory_context(messages: list[BaseMessage]) -> str:
        return " ".join(str(m.content) for m in messages if m.id == CONTEXT_MESSAGE_ID)

    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as agent_side:
        address = agent_side.remember("Alice's billing address is 12 Zebulon Road.", user_id="alice")
        assert address is not None
        hooks = MemoryHooks(agent_side)
        run = {"configurable": {"user_id": "alice", "thread_id": "t1"}}
        turn: list[BaseMessage] = [HumanMessage("What is my billing address?", id="question")]
        assert "Zebulon Road" in memory_context(hooks.context_messages(turn, run))
        with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as operator:
            operator.invalidate(address.id, reason="moved")
        turn += [AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}]),
                 ToolMessage("nothing found", tool_call_id="c1")]
        assert "Zebulon Road" not in memory_context(hooks.context_messages(turn, run))


def test_writes_and_erasures_larger_than_a_servers_batch_are_split(chroma_server: int, namespace: str) -> None:
    # Found by an attack: a server refuses writes of more than ~5,461 rows, and the audit trail's
    # upsert was not split: remember_many of 6,000 statements acknowledged every one and stored
    # none, and forget(user_id=) of a user that large erased nothing.
    client = _client(chroma_server)
    size = client.get_max_batch_size() + 100
    with Memory(client=client, namespace=namespace, embedder=HashEmbedder()) as memory:
        ids = memory.remember_many([f"Statement {i} about parcel {i}." for i in range(size)], user_id="alice")
        memory.drain_writes()
        assert len(ids) == size and len(memory.list(user_id="alice", limit=100_000)) == size
        assert memory.forget(user_id="alice").records == size
        assert memory.list(user_id="alice", limit=100_000) == []


def test_a_user_erased_by_another_client_is_served_as_gone_not_as_an_error(chroma_server: int, namespace: str) -> None:
    # Found by an attack: the client that had read alice kept the handle of the collection the
    # other one dropped, and answered chromadb's NotFoundError to every call for her until restart.
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as reader, \
            Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as operator:
        reader.remember("Alice lives in Porto.", user_id="alice")
        assert [m.record.text for m in reader.recall("where does alice live", user_id="alice")]
        operator.forget(user_id="alice")
        assert reader.recall("where does alice live", user_id="alice") == []
        assert reader.list(user_id="alice") == []
        record = reader.remember("Alice now lives in Braga.", user_id="alice")  # a new start for her
        assert record is not None
        assert [r.text for r in operator.list(user_id="alice")] == ["Alice now lives in Braga."]


QUEUE_THEN_WAIT = textwrap.dedent(
    """
    import sys, time
    import chromadb
    from chromadb.config import Settings
    from mnemic import Memory, HashEmbedder
    client = chromadb.HttpClient(host="127.0.0.1", port=int(sys.argv[1]), settings=Settings(anonymized_telemetry=False))
    memory = Memory(client=client, namespace=sys.argv[2], embedder=HashEmbedder(), lexical_path=sys.argv[3])
    entries = [f"Alice diary entry {i} mentions the glockenspiel." for i in range(3000)]
    ids = memory.remember_many(entries, user_id="alice")
    print(len(ids), flush=True)
    time.sleep(60)
    """
)


def test_statements_another_process_accepted_before_an_erasure_are_never_stored(
        chroma_server: int, namespace: str, tmp_path: Path) -> None:
    # Found by an attack: a process killed with statements still queued replayed them from its
    # journal on its next open, after another process had erased the user: alice came back.
    import os
    import signal
    import sqlite3

    journal = tmp_path / "b.sqlite3"
    child = subprocess.Popen([sys.executable, "-c", QUEUE_THEN_WAIT, str(chroma_server), namespace, str(journal)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "3000"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with sqlite3.connect(journal) as connection:
        assert connection.execute("SELECT count(*) FROM write_journal").fetchone()[0] > 0  # left queued
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as operator:
        operator.forget(user_id="alice")
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder(),
                lexical_path=journal) as reopened:
        assert reopened.list(user_id="alice", limit=10_000) == []
        later = reopened.remember_many(["Alice started a new diary."], user_id="alice")  # after the erasure: kept
        reopened.drain_writes()
        assert [r.id for r in reopened.list(user_id="alice")] == later


def test_another_processs_keyword_file_drops_a_user_erased_elsewhere(
        chroma_server: int, namespace: str, tmp_path: Path) -> None:
    # Found by an attack: the keyword index of a process with its own lexical_path kept an erased
    # user's words for good (its checks only looked at users that still had records).
    keywords = tmp_path / "b.sqlite3"
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder(),
                lexical_path=keywords) as writer:
        writer.remember("Alice's diagnosis is xyloprothrombosis.", user_id="alice")
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as operator:
        operator.forget(user_id="alice")
    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder(),
                lexical_path=keywords):
        pass  # opening checks the index against the store
    assert not any(b"xyloprothrombosis" in f.read_bytes() for f in tmp_path.glob("b.sqlite3*"))


@pytest.mark.parametrize("erasure", ["delete", "forget"])
@pytest.mark.parametrize("noticed_by", ["recall", "repair"])
def test_a_running_processs_keyword_file_is_scrubbed_of_what_another_process_erased(
        chroma_server: int, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, erasure: str,
        noticed_by: str) -> None:
    # Found by an attack: B dropped the erased record's row but its words stayed in B's file (old
    # index segments, the WAL) for as long as B ran, repair() included: only the eraser scrubbed.
    from mnemic.core import lexical_sync

    monkeypatch.setattr(lexical_sync, "SERVER_SYNC_INTERVAL_S", 0.0)
    keywords = tmp_path / "b.sqlite3"

    def held() -> list[str]:
        return [f.name for f in tmp_path.glob("b.sqlite3*") if b"zyxquorblax" in f.read_bytes()]

    with Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder()) as eraser, \
            Memory(client=_client(chroma_server), namespace=namespace, embedder=HashEmbedder(),
                   lexical_path=keywords) as running:
        record = eraser.remember("Alice's diagnosis is zyxquorblaxitude.", user_id="alice")
        eraser.remember("Bob likes quiet trains.", user_id="bob")
        assert [m.record.id for m in running.recall("diagnosis zyxquorblaxitude", user_id="alice")] == [record.id]
        assert held()
        if erasure == "delete":
            eraser.delete(record.id)
        else:
            eraser.forget(user_id="alice")
        if noticed_by == "repair":
            running.repair()
            assert held() == []
        assert running.recall("diagnosis zyxquorblaxitude", user_id="alice") == []
        assert held() == []
        running.recall("quiet trains", user_id="bob")
        assert held() == []

"""MnemicStore beyond the generic contract: whose memory an item is, policy, safety, audit, restarts.

The contract every BaseStore should meet is in tests/store_contract.py (run against LangGraph's
InMemoryStore too by tests/test_langgraph_store_contract.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.policy import PolicyError
from mnemic.integrations.langgraph import MnemicStore, NoteRefusedError
from mnemic.tools import core

ALICE = ("memories", "alice")


@pytest.fixture
def base(tmp_path: Path) -> Iterator[Path]:
    # tmpfs when available: Chroma syncs each write to disk, ~10x slower here.
    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="mnemic-test-", dir="/dev/shm"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def memory(base: Path) -> Iterator[Memory]:
    with Memory(base / "m", embedder=HashEmbedder()) as mem:
        yield mem


@pytest.fixture
def store(memory: Memory) -> MnemicStore:
    return MnemicStore(memory, index={"fields": ["text"]})


def record_id(store: MnemicStore, namespace: tuple[str, ...], key: str) -> str:
    return store.notes.note_id(store.user_for(namespace), json.dumps([list(namespace), key], ensure_ascii=False))


# -- whose memory an item is --------------------------------------------------------------------


def test_an_item_is_a_memory_of_the_user_its_namespace_names(memory: Memory, store: MnemicStore) -> None:
    store.put(ALICE, "seat", {"text": "Prefers window seats.", "since": 2024})
    store.put(("memories", "alice", "travel"), "airline", {"text": "Flies with KLM."})
    records = memory.list(user_id="alice")
    assert sorted(r.text for r in records) == ["Flies with KLM.", "Prefers window seats."]
    assert {r.kind for r in records} == {"note"}
    assert {r.scope for r in records} == {"/langgraph/memories/alice", "/langgraph/memories/alice/travel"}
    assert memory.users() == ["alice"]


@pytest.mark.parametrize("change", [{"text": "Prefers aisle seats."}, {"metadata": {"reviewed": True}},
                                    {"scope": "/elsewhere"}])
def test_an_item_is_changed_through_the_store_not_by_memory_update(memory: Memory, store: MnemicStore,
                                                                   change: dict[str, object]) -> None:
    """update() of an item's record would leave the store serving the old value (text) or lose
    the item (its fields): it is refused, naming the way that works, and nothing changes."""
    store.put(ALICE, "seat", {"text": "Prefers window seats."})
    rid = record_id(store, ALICE, "seat")
    with pytest.raises(ValueError, match=r"MnemicStore\.put"):
        memory.update(rid, **change)  # type: ignore[arg-type]
    item = store.get(ALICE, "seat")
    assert item is not None and item.value == {"text": "Prefers window seats."}
    assert memory.get(rid).text == "Prefers window seats."
    store.put(ALICE, "seat", {"text": "Prefers aisle seats."})
    assert [i.value["text"] for i in store.search(ALICE, query="seats")] == ["Prefers aisle seats."]


def test_store_items_are_served_by_the_memory_tools_to_their_user_only(memory: Memory, store: MnemicStore) -> None:
    store.put(ALICE, "seat", {"text": "Prefers window seats."})
    assert "Prefers window seats." in core.search_memory(memory, "window seats", user_id="alice")
    assert core.search_memory(memory, "window seats", user_id="bob") == core.NO_MEMORIES


def test_a_short_namespace_gets_a_pseudo_user_shared_with_nobody(memory: Memory, store: MnemicStore) -> None:
    store.put(("docs",), "refunds", {"text": "Refunds take five days."})
    assert memory.users() == ['langgraph-ns:["docs"]']
    assert core.search_memory(memory, "refunds", user_id="alice") == core.NO_MEMORIES
    assert [i.key for i in store.search(("docs",), query="refunds")] == ["refunds"]


def test_the_user_position_is_configurable(memory: Memory) -> None:
    store = MnemicStore(memory, user_position=0, index={"fields": ["text"]})
    store.put(("alice", "memories"), "k", {"text": "Likes jazz."})
    assert [r.text for r in memory.list(user_id="alice")] == ["Likes jazz."]
    assert [i.key for i in store.search(("alice",))] == ["k"]
    flat = MnemicStore(memory, user_position=None)
    assert flat.user_for(("alice", "memories")) == 'langgraph-ns:["alice", "memories"]'
    with pytest.raises(ValueError, match="user_position"):
        MnemicStore(memory, user_position=-1)


def test_forgetting_a_user_erases_their_store_items(memory: Memory, store: MnemicStore) -> None:
    store.put(ALICE, "seat", {"text": "Prefers window seats."})
    store.put(("memories", "bob"), "seat", {"text": "Prefers aisle seats."})
    assert memory.forget(user_id="alice") == 1
    assert store.get(ALICE, "seat") is None
    assert store.search(("memories",)) and store.list_namespaces() == [("memories", "bob")]


def test_two_keys_with_the_same_text_stay_two_items(store: MnemicStore) -> None:
    store.put(ALICE, "a", {"text": "Likes jazz."})
    store.put(ALICE, "b", {"text": "Likes jazz."})
    assert sorted(i.key for i in store.search(ALICE, query="jazz")) == ["a", "b"]


def test_a_remembered_fact_and_a_store_item_do_not_merge(memory: Memory, store: MnemicStore) -> None:
    store.put(ALICE, "jazz", {"text": "Likes jazz."})
    fact = memory.remember("Likes jazz.", user_id="alice")
    assert fact is not None and fact.kind == "fact"
    assert store.get(ALICE, "jazz") is not None
    assert sorted(r.kind for r in memory.list(user_id="alice")) == ["fact", "note"]


# -- policy, safety, audit ----------------------------------------------------------------------


def test_policy_off_makes_the_store_read_only_without_raising(memory: Memory, store: MnemicStore,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    store.put(ALICE, "seat", {"text": "Prefers window seats."})
    memory.set_policy(mode="off")
    store.put(ALICE, "other", {"text": "x"})
    store.put(ALICE, "seat", {"text": "Prefers aisle seats."})
    assert store.get(ALICE, "other") is None
    assert store.get(ALICE, "seat").value == {"text": "Prefers window seats."}  # the key keeps what it held
    assert store.refused == {"policy": 2}
    assert [r.levelname for r in caplog.records if "did not store" in r.message] == ["WARNING"]  # once, not per put
    store.delete(ALICE, "seat")
    assert store.get(ALICE, "seat") is None
    with pytest.raises(PolicyError, match="off"):
        MnemicStore(memory, on_refused="raise").put(ALICE, "other", {"text": "x"})


class NoteState(TypedDict):
    note: str


def test_a_put_the_policy_refuses_does_not_crash_the_graph(memory: Memory) -> None:
    """A node that writes a secret (or writes under policy off) must not end the run with an error."""
    from langgraph.config import get_store

    def remember(state: NoteState) -> dict[str, str]:
        get_store().put(ALICE, "login", {"text": state["note"]})
        return {"note": "done"}

    builder = StateGraph(NoteState)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    store = MnemicStore(memory)
    graph = builder.compile(store=store)

    assert graph.invoke({"note": "my password: hunter2hunter2"}) == {"note": "done"}
    memory.set_policy(mode="off")
    assert graph.invoke({"note": "harmless"}) == {"note": "done"}
    assert store.get(ALICE, "login") is None
    assert store.refused == {"refused value": 1, "policy": 1}


def test_a_layout_that_files_the_runs_user_under_another_label_is_refused_in_the_run(memory: Memory) -> None:
    """LangGraph's docs use both ("memories", user_id) and (user_id, "memories"). With the default
    user_position=1 the second layout filed every user's items under one owner, "memories", whom
    any user called so could then read: inside a run whose user sits elsewhere in the namespace,
    the store refuses and names the position that fits."""
    from langgraph.config import get_config, get_store
    from langgraph.store.base import InvalidNamespaceError

    def remember(state: NoteState) -> dict[str, str]:
        user = get_config()["configurable"]["user_id"]
        get_store().put((user, "memories"), "diet", {"text": state["note"]})
        return {"note": "done"}

    def graph_with(store: MnemicStore) -> Any:
        builder = StateGraph(NoteState)
        builder.add_node("remember", remember)
        builder.add_edge(START, "remember")
        builder.add_edge("remember", END)
        return builder.compile(store=store)

    run = {"configurable": {"user_id": "alice"}}
    with pytest.raises(InvalidNamespaceError, match="user_position=0"):
        graph_with(MnemicStore(memory)).invoke({"note": "Alice is vegetarian."}, run)
    assert memory.users() == []
    graph_with(MnemicStore(memory, user_position=0)).invoke({"note": "Alice is vegetarian."}, run)
    assert memory.users() == ["alice"]
    # Outside a run nothing names the user: the position decides, as before.
    MnemicStore(memory).put(("memories", "bob"), "k", {"text": "Bob likes tea."})
    assert memory.users() == ["alice", "bob"]


def test_the_policy_ttl_applies_to_items_without_one(memory: Memory, store: MnemicStore) -> None:
    memory.set_policy(ttl_seconds=1)
    store.put(ALICE, "k", {"text": "x"})
    store.put(ALICE, "own", {"text": "y"}, ttl=1)  # minutes: an item's own ttl wins
    time.sleep(1.3)
    assert store.get(ALICE, "k") is None
    assert store.get(ALICE, "own") is not None


def test_a_secret_anywhere_in_a_value_is_refused(memory: Memory) -> None:
    strict = MnemicStore(memory, index={"fields": ["text"]}, on_refused="raise")
    with pytest.raises(NoteRefusedError, match="openai_key"):
        strict.put(ALICE, "k", {"text": "config", "nested": {"key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB"}})
    with pytest.raises(NoteRefusedError, match="password"):
        strict.put(ALICE, "k", {"text": "my password: hunter2hunter2"}, index=False)
    with pytest.raises(NoteRefusedError, match="credential"):
        strict.put(ALICE, "k", {"text": "service account", "login": {"api_key": "abcd1234efgh5678ijkl"}})
    lenient = MnemicStore(memory, index={"fields": ["text"]})
    lenient.put(ALICE, "k", {"text": "my password: hunter2hunter2"})
    assert lenient.get(ALICE, "k") is None and lenient.refused == {"refused value": 1}
    assert memory.users() == [] and memory.stats.secrets_refused == 4


def test_sensitive_categories_are_screened_when_asked(memory: Memory) -> None:
    value = {"text": "Was diagnosed with diabetes last year."}
    MnemicStore(memory).put(ALICE, "health", value)  # an application's deliberate write
    with pytest.raises(NoteRefusedError, match="health"):
        MnemicStore(memory, screen_sensitive=True, on_refused="raise").put(ALICE, "health2", value)
    screened = MnemicStore(memory, screen_sensitive=True)
    screened.put(ALICE, "health2", value)
    assert screened.get(ALICE, "health2") is None


def test_every_put_and_delete_is_in_the_audit_trail(memory: Memory, store: MnemicStore) -> None:
    store.put(ALICE, "seat", {"text": "Prefers window seats."})
    store.put(ALICE, "seat", {"text": "Prefers aisle seats."})
    store.put(ALICE, "seat", {"text": "Prefers aisle seats.", "why": "legroom"})
    store.delete(ALICE, "seat")
    store.put(ALICE, "seat", {"text": "Prefers window seats again."})
    trail = memory.history(record_id(store, ALICE, "seat"))
    assert [(e.action, e.version) for e in trail] == [("add", 1), ("update", 2), ("update", 3), ("delete", 4),
                                                      ("add", 5)]
    # A delete erases what the item said, from its trail too; the trail keeps who did what, when.
    assert all(e.before is None and e.after is None for e in trail[:4])
    assert trail[4].after == "Prefers window seats again."
    assert {e.actor for e in trail} == {"langgraph-store"}


def test_values_must_be_json(store: MnemicStore) -> None:
    with pytest.raises(TypeError, match=r"JSON.*'k'.*datetime.*isoformat"):
        store.put(ALICE, "k", {"when": datetime.now(timezone.utc)})
    with pytest.raises(TypeError, match="JSON"):
        store.put(ALICE, "k", {"tags": {"a", "b"}})
    assert store.get(ALICE, "k") is None


def test_langgraph_index_config_is_accepted_and_embeds_per_field(memory: Memory) -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[float(t.count("a")), float(t.count("b")), 1.0] for t in texts]

    store = MnemicStore(memory, index={"dims": 3, "embed": embed, "fields": ["title", "body"]}, scores="cosine")
    assert store.index_config["embed"] is embed and store.index_config["fields"] == ["title", "body"]
    store.put(ALICE, "doc", {"title": "aaaa", "body": "bbbb", "other": "ignored"})
    assert calls[-1] == ["aaaa", "bbbb"]  # one vector per field text
    best = store.search(ALICE, query="aaaa")[0]
    assert best.score == pytest.approx(1.0)  # the best field matches exactly
    with pytest.raises(ValueError, match="dims"):
        MnemicStore(memory, index={"embed": embed})
    with pytest.raises(ValueError, match="dims"):
        MnemicStore(memory, index={"dims": 3})
    assert MnemicStore(memory, index={"dims": memory.embedder.dimension}).index_fields == ["$"]


def test_a_langchain_embeddings_object_embeds_the_memory_and_the_store(base: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    model = DeterministicFakeEmbedding(size=16)
    with Memory(base / "lc", embedder=model) as memory:
        assert memory.embedder.dimension == 16
        store = MnemicStore(memory, index={"dims": 16, "embed": model, "fields": ["text"]}, scores="cosine")
        store.put(ALICE, "k", {"text": "Prefers window seats."})
        assert store.search(ALICE, query="Prefers window seats.")[0].score == pytest.approx(1.0, abs=1e-5)
        assert memory.recall("Prefers window seats.", user_id="alice")[0].record.text == "Prefers window seats."


def test_the_vectors_the_store_computes_are_never_mistaken_for_a_secret(memory: Memory) -> None:
    # The per-field vectors are kept as base64 in the record's metadata; about 1 put in 100 made a
    # base64 run that read like a password or an IBAN and was refused as a secret.
    from langchain_core.embeddings import DeterministicFakeEmbedding

    model = DeterministicFakeEmbedding(size=64)
    store = MnemicStore(memory, index={"dims": 64, "embed": model, "fields": ["title", "body"]})
    for n in range(300):
        store.put(ALICE, f"doc-{n}", {"title": f"Trip {n} to the coast", "body": f"Day {n}: took the train."})
    assert len(store.search(ALICE, limit=1000)) == 300
    store.put(ALICE, "leak", {"title": "Router", "body": "The wifi password is Tr0ub4dor&3"})
    assert store.get(ALICE, "leak") is None  # the texts themselves are still screened


def test_filters_take_dotted_paths_into_nested_values(store: MnemicStore) -> None:
    store.put(ALICE, "a", {"text": "x", "user": {"access-level": "admin", "age": 40}, "access-level": "top"})
    store.put(ALICE, "b", {"text": "y", "user": {"access-level": "guest", "age": 20}})
    store.put(ALICE, "c", {"text": "z", "user.access-level": "literal"})
    assert [i.key for i in store.search(ALICE, filter={"user.access-level": "admin"})] == ["a"]
    assert [i.key for i in store.search(ALICE, filter={"user.age": {"$gt": 30}})] == ["a"]
    assert [i.key for i in store.search(ALICE, filter={"access-level": "top"})] == ["a"]
    assert [i.key for i in store.search(ALICE, filter={"user.access-level": "literal"})] == ["c"]


def test_scores_are_hybrid_by_default_and_cosine_when_asked(memory: Memory) -> None:
    hybrid = MnemicStore(memory, index={"fields": ["text"]})
    hybrid.put(ALICE, "k", {"text": "Prefers window seats."})
    cosine = MnemicStore(memory, index={"fields": ["text"]}, scores="cosine")
    exact = cosine.search(ALICE, query="Prefers window seats.")[0]
    assert exact.score == pytest.approx(1.0, abs=1e-5)
    assert hybrid.search(ALICE, query="Prefers window seats.")[0].score < exact.score  # a fused 0..1 score
    with pytest.raises(ValueError, match="scores"):
        MnemicStore(memory, scores="dot")  # type: ignore[arg-type]


def test_the_langgraph_root_label_is_refused_by_put_but_accepted_through_batch(store: MnemicStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"text": "v"})
    store.batch([PutOp(("langgraph", "x"), "k", {"text": "v"})])  # how LangGraph writes its reserved namespaces
    assert store.get(("langgraph", "x"), "k").value == {"text": "v"}


def test_an_over_long_namespace_is_refused_clearly(store: MnemicStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="too deep"):
        store.put(tuple(f"l{n}" for n in range(40)), "k", {"text": "x"})


# -- lifecycle ----------------------------------------------------------------------------------


def test_items_survive_a_restart(base: Path) -> None:
    with Memory(base / "m", embedder=HashEmbedder()) as memory:
        store = MnemicStore(memory, index={"fields": ["text"]})
        store.put(ALICE, "seat", {"text": "Prefers window seats."})
        created = store.get(ALICE, "seat")
    with Memory(base / "m", embedder=HashEmbedder()) as memory:
        store = MnemicStore(memory, index={"fields": ["text"]})
        assert store.get(ALICE, "seat") == created
        assert [i.key for i in store.search(("memories",), query="window seats")] == ["seat"]
        assert store.list_namespaces() == [ALICE]


def test_sweeping_removes_expired_items_with_a_trail(memory: Memory, store: MnemicStore) -> None:
    store.put(ALICE, "short", {"text": "x"}, ttl=1 / 60)
    store.put(ALICE, "long", {"text": "y"}, ttl=10)
    time.sleep(1.3)
    assert store.sweep_ttl() == 1
    assert [r.text for r in memory.list(user_id="alice", include_expired=True)] == ["y"]
    assert memory.history(record_id(store, ALICE, "short"))[-1].actor == "langgraph-store ttl"


def test_the_ttl_sweeper_thread_starts_and_stops(store: MnemicStore) -> None:
    thread = store.start_ttl_sweeper(sweep_interval_minutes=10)
    assert thread.is_alive() and store.start_ttl_sweeper() is thread
    assert store.stop_ttl_sweeper(timeout=5)


class State(TypedDict):
    user: str
    said: str
    recalled: list[str]


def remember_node(state: State, *, store: BaseStore) -> dict[str, Any]:
    store.put(("memories", state["user"]), "said", {"text": state["said"]})
    return {}


def recall_node(state: State, *, store: BaseStore) -> dict[str, Any]:
    return {"recalled": [i.value["text"] for i in store.search(("memories", state["user"]), query=state["said"])]}


def test_mnemic_store_is_a_drop_in_for_compile(store: MnemicStore) -> None:
    builder = StateGraph(State)
    builder.add_node("remember", remember_node)
    builder.add_node("recall", recall_node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)
    alice = graph.invoke({"user": "alice", "said": "Lives in Austin.", "recalled": []})
    bob = graph.invoke({"user": "bob", "said": "Lives in Boston.", "recalled": []})
    assert alice["recalled"] == ["Lives in Austin."] and bob["recalled"] == ["Lives in Boston."]


# -- packaging ----------------------------------------------------------------------------------


def test_mnemic_imports_without_agent_frameworks_and_the_adapter_says_what_to_install() -> None:
    script = (
        "import sys\n"
        "for name in ('langgraph', 'langchain_core', 'langchain'):\n"
        "    sys.modules[name] = None\n"
        "import mnemic, mnemic.tools.core\n"
        "try:\n"
        "    import mnemic.integrations.langgraph\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert "pip install 'mnemic[langgraph]'" in out.stdout
    loaded = subprocess.run([sys.executable, "-c", "import sys, mnemic; print(sorted(m for m in sys.modules "
                             "if m.split('.')[0] in ('langgraph', 'langchain_core', 'langchain')))"],
                            capture_output=True, text=True, timeout=120, check=True)
    assert loaded.stdout.strip() == "[]"


def test_search_scores_do_not_depend_on_another_users_items(base: Path) -> None:
    # Store search took its bm25 from FTS5, which weighs words by the whole table: how often other
    # users wrote "kayak" moved alice's scores, a glimpse of their memories.
    def scores(others_write: bool) -> list[tuple[str, float | None]]:
        with Memory(base / ("with" if others_write else "without"), embedder=HashEmbedder()) as memory:
            store = MnemicStore(memory, index={"fields": ["text"]})
            store.put(ALICE, "boat", {"text": "Alice paddles a red kayak on weekends."})
            store.put(ALICE, "food", {"text": "Alice likes spicy ramen."})
            if others_write:
                for i in range(30):
                    store.put(("memories", "bob"), f"k{i}", {"text": f"Bob's kayak trip number {i}."})
            return [(item.key, item.score) for item in store.search(ALICE, query="kayak weekends")]

    assert scores(others_write=True) == scores(others_write=False)

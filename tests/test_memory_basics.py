"""The everyday surface of Memory: remember, recall with explanations, get, list, history."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder


def test_remember_returns_a_record_with_provenance(memory: Memory) -> None:
    record = memory.remember(
        "We chose PostgreSQL for the user database.", user_id="alice", scope="/project/atlas",
        categories=["decisions"], importance=0.8, author="assistant", session_id="s1", turn=3,
        source="planner", metadata={"ticket": "ATL-7"},
    )
    assert record is not None
    stored = memory.get(record.id)
    assert stored.text == "We chose PostgreSQL for the user database."
    assert (stored.user_id, stored.scope, stored.categories) == ("alice", "/project/atlas", ["decisions"])
    assert (stored.author, stored.session_id, stored.turn, stored.source) == ("assistant", "s1", 3, "planner")
    assert stored.importance == pytest.approx(0.8)
    assert stored.metadata == {"ticket": "ATL-7"}
    assert stored.state == "valid"


def test_recall_ranks_the_relevant_fact_first_and_explains_it(memory: Memory) -> None:
    memory.remember("We chose PostgreSQL for the user database.", user_id="alice")
    memory.remember("Alice likes hiking in the mountains.", user_id="alice")
    matches = memory.recall("which database for users", user_id="alice")
    assert matches[0].record.text.startswith("We chose PostgreSQL")
    top = matches[0]
    assert top.score > 0
    assert "database" in top.breakdown.matched_terms
    assert "semantic" in top.explanation and "lexical" in top.explanation
    parts = top.breakdown
    assert top.score == pytest.approx(
        parts.semantic + parts.lexical + parts.recency + parts.importance + parts.context, abs=1e-5)
    assert "relevance" in top.format()


def test_recall_returns_nothing_when_nothing_is_relevant(memory: Memory) -> None:
    memory.remember("Alice likes hiking in the mountains.", user_id="alice")
    assert memory.recall("quarterly tax filing deadline", user_id="alice") == []


def test_exact_duplicate_is_merged_not_stored_twice(memory: Memory) -> None:
    first = memory.remember("Alice prefers tea.", user_id="alice", categories=["a"])
    second = memory.remember("  alice PREFERS tea  ", user_id="alice", categories=["b"])
    assert first is not None and second is not None
    assert second.id == first.id
    assert sorted(memory.get(first.id).categories) == ["a", "b"]
    assert len(memory.list(user_id="alice")) == 1
    assert [h.action for h in memory.history(first.id)] == ["add", "merge"]


def test_remember_many_is_background_and_reads_drain_first(memory: Memory) -> None:
    ids = memory.remember_many([f"Fact number {i} about gardening." for i in range(20)], user_id="bob")
    assert len(ids) == 20
    # recall drains: every queued write is visible to the next read.
    assert len(memory.list(user_id="bob")) == 20
    assert {r.id for r in memory.list(user_id="bob")} == set(ids)


def test_remember_many_checks_input_before_queueing(memory: Memory) -> None:
    with pytest.raises(ValueError):
        memory.remember_many(["fine", ""], user_id="bob")
    memory.drain_writes()
    assert memory.list(user_id="bob") == []


def test_close_drains_pending_writes(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as mem:
        mem.remember_many([f"queued fact {i}" for i in range(10)], user_id="carol")
    with Memory(store_path, embedder=HashEmbedder()) as mem:
        assert len(mem.list(user_id="carol")) == 10


def test_facts_persist_across_reopen(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as mem:
        record = mem.remember("Dana's dog is called Pixel.", user_id="dana")
        assert record is not None
    with Memory(store_path, embedder=HashEmbedder()) as mem:
        assert mem.get(record.id).text == "Dana's dog is called Pixel."
        assert mem.recall("dog name", user_id="dana")[0].record.id == record.id


def test_history_records_every_mutation_with_actor_and_texts(memory: Memory) -> None:
    record = memory.remember("Eve works at Acme.", user_id="eve")
    assert record is not None
    memory.update(record.id, text="Eve works at Globex.", actor="ops", reason="she changed jobs")
    memory.invalidate(record.id, reason="left the company", actor="ops")
    history = memory.history(record.id)
    assert [h.action for h in history] == ["add", "update", "invalidate"]
    update = history[1]
    assert (update.before, update.after, update.actor, update.reason) == (
        "Eve works at Acme.", "Eve works at Globex.", "ops", "she changed jobs")
    assert history[2].state_after == "invalid"
    memory.delete(record.id, actor="ops")
    assert memory.history(record.id)[-1].action == "delete"


def test_update_keeps_source_privacy_and_provenance(memory: Memory) -> None:
    record = memory.remember("Frank's budget is 5k.", user_id="frank", private=True, source="crm",
                             author="assistant", session_id="s9", turn=2, categories=["money"])
    assert record is not None
    updated = memory.update(record.id, text="Frank's budget is 7k.")
    for field in ("private", "source", "author", "session_id", "turn", "categories", "user_id", "created_at"):
        assert getattr(updated, field) == getattr(record, field), field
    assert memory.get(record.id).private is True
    assert memory.get(record.id).source == "crm"


def test_update_with_new_text_is_found_by_the_new_words(memory: Memory) -> None:
    record = memory.remember("Gina drives a bicycle to work.", user_id="gina")
    assert record is not None
    memory.update(record.id, text="Gina takes the tram to work.")
    top = memory.recall("tram", user_id="gina")
    assert top and top[0].record.id == record.id
    assert not [m for m in memory.recall("bicycle", user_id="gina") if "bicycle" in m.breakdown.matched_terms]


def test_private_records_only_reach_their_source(memory: Memory) -> None:
    memory.remember("Hank's salary is confidential: 90k.", user_id="hank", private=True, source="hr")
    assert memory.recall("salary", user_id="hank") == []
    assert memory.recall("salary", user_id="hank", source="sales") == []
    assert memory.recall("salary", user_id="hank", source="hr")


def test_list_and_organisation(memory: Memory) -> None:
    memory.remember("alpha one", user_id="u", scope="/project/alpha", categories=["x"])
    memory.remember("alpha two", user_id="u", scope="/project/alpha/sub", categories=["x", "y"])
    memory.remember("beta one", user_id="u", scope="/project/beta")
    assert memory.list_scopes("/project", user_id="u") == ["/project/alpha", "/project/beta"]
    assert memory.list_categories(user_id="u") == {"x": 2, "y": 1}
    tree = memory.tree(user_id="u")
    assert tree["count"] == 3
    assert tree["children"]["project"]["children"]["alpha"]["count"] == 2
    info = memory.info("/project/alpha", user_id="u")
    assert info["records"] == 2 and info["states"]["valid"] == 2
    assert [r.text for r in memory.list(user_id="u", limit=1, offset=0)] == ["beta one"]


def test_forget_requires_a_criterion_and_counts(memory: Memory) -> None:
    memory.remember("old fact", user_id="u", scope="/a")
    memory.remember("other fact", user_id="u", scope="/b")
    with pytest.raises(ValueError, match="at least one criterion"):
        memory.forget()
    assert memory.forget(user_id="u", scope="/a") == 1
    assert [r.text for r in memory.list(user_id="u")] == ["other fact"]


def test_forget_erases_text_from_history(memory: Memory) -> None:
    record = memory.remember("Ivy's passport number is stored elsewhere.", user_id="ivy")
    assert record is not None
    memory.update(record.id, text="Ivy travels often.")
    assert memory.forget(user_id="ivy") == 1
    trail = memory.history(record.id)
    assert [h.action for h in trail] == ["forget"]
    assert all(h.before is None and h.after is None for h in trail)
    assert all(h.user_id != "ivy" for h in trail)


def test_reset_empties_the_namespace(memory: Memory) -> None:
    memory.remember("a", user_id="u1")
    memory.remember("b", user_id="u2")
    memory.reset()
    assert memory.list() == []
    memory.remember("c", user_id="u1")
    assert len(memory.list()) == 1


def test_namespaces_are_separate(store_path: Path) -> None:
    with Memory(store_path, namespace="agent-a", embedder=HashEmbedder()) as a, \
            Memory(store_path, namespace="agent-b", embedder=HashEmbedder()) as b:
        a.remember("only in a", user_id="u")
        assert b.list(user_id="u") == []
        assert b.recall("only in a", user_id="u") == []


def test_user_collections_let_chromas_write_log_be_purged(tmp_path: Path) -> None:
    """Chroma keeps writes in its sqlite log until a collection's index is saved; with its default
    threshold a user's collection almost never saved, so the log, and every write's cost, grew
    with the whole database."""
    import sqlite3

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        for batch in range(6):
            memory.remember_many([f"fact {batch}-{i} about topic {i}" for i in range(50)], user_id="u")
        memory.drain_writes()
        assert len(memory.list(user_id="u", limit=1000)) == 300
    log = sqlite3.connect(tmp_path / "m" / "chroma" / "chroma.sqlite3")
    try:
        user_rows = log.execute(
            "SELECT count(*) FROM embeddings_queue q JOIN collections c ON q.topic LIKE '%' || c.id "
            "WHERE c.name LIKE '%-m-%'").fetchone()[0]
    finally:
        log.close()
    assert user_rows < 150


def test_a_user_collection_from_an_older_mnemic_gets_the_index_saving_threshold(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    with Memory(client=client, namespace="old", embedder=HashEmbedder()) as memory:
        name = memory._store.collection_name("u")
        client.create_collection(name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
                                 metadata={"mnemic": "memory", "user_id": "u", "namespace": "old"})
        assert client.get_collection(name).configuration_json["hnsw"]["sync_threshold"] == 1000
        memory.remember("A fact kept in a collection an older mnemic made.", user_id="u")
        assert memory.recall("older mnemic", user_id="u")
    assert client.get_collection(name).configuration_json["hnsw"]["sync_threshold"] == 100


def test_revision_changes_with_every_change_to_the_users_records_and_only_theirs(memory: Memory) -> None:
    seen = [memory.revision("ana")]

    def changed() -> bool:
        seen.append(memory.revision("ana"))
        return seen[-1] != seen[-2]

    record = memory.remember("Ana keeps bees on the roof.", user_id="ana")
    assert record is not None and changed()
    memory.recall("bees", user_id="ana")
    memory.remember("Ben collects stamps.", user_id="ben")
    assert not changed()
    memory.update(record.id, text="Ana keeps two hives of bees on the roof.")
    assert changed()
    memory.invalidate(record.id, reason="she gave the hives away")
    assert changed()
    memory.delete(record.id)
    assert changed()
    with pytest.raises(ValueError):
        memory.revision("")


def test_records_in_the_older_one_key_per_field_form_are_read_and_compacted_when_changed(store_path: Path) -> None:
    import json

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        record = memory.remember("Ana keeps bees on the roof.", user_id="ana", scope="/home",
                                 categories=["hobby"], metadata={"hives": 2}, session_id="s1", turn=4)
        assert record is not None
        collection = memory._store.user_collection("ana", create=False)
        compact = collection.get(ids=[record.id], include=["metadatas"])["metadatas"][0]
        # As an older mnemic wrote it: every field a key of its own.
        spread = {**json.loads(compact["record"]), "scope_path": compact["scope_path"], "record": None}
        collection.update(ids=[record.id], metadatas=[spread])
        assert "record" not in collection.get(ids=[record.id], include=["metadatas"])["metadatas"][0]
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert memory.get(record.id) == record
        assert [m.record.id for m in memory.recall("bees on the roof", user_id="ana")] == [record.id]
        assert [r.id for r in memory.list(user_id="ana", scope="/home")] == [record.id]
        updated = memory.update(record.id, importance=0.9)
        stored = memory._store.user_collection("ana", create=False).get(ids=[record.id], include=["metadatas"])
        assert set(stored["metadatas"][0]) == {"record", "kind", "scope_path", "updated_at"}
        assert memory.get(record.id) == updated
        assert updated.metadata == {"hives": 2} and updated.categories == ["hobby"] and updated.turn == 4


def test_a_statement_said_again_after_its_record_went_gets_a_record_and_trail_of_its_own(memory: Memory) -> None:
    # Record ids derive from owner and text (one record across processes); an id whose record was
    # invalidated or deleted is not reused.
    first = memory.remember("Ines sings in a choir.", user_id="ines")
    assert first is not None
    memory.invalidate(first.id, reason="she stopped")
    again = memory.remember("Ines sings in a choir.", user_id="ines")
    assert again is not None and again.id != first.id
    assert memory.get(first.id).state == "invalid" and memory.get(again.id).state == "valid"
    memory.delete(again.id)
    third = memory.remember("Ines sings in a choir.", user_id="ines")
    assert third is not None and third.id not in {first.id, again.id}
    assert [h.action for h in memory.history(third.id)] == ["add"]

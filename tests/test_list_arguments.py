"""Arguments that take a list, given one string or a mapping instead.

Python iterates both without complaint: a string letter by letter, a dict by its keys. So
`remember_many({"user_id": "bob", "text": "..."})` stored the facts "user_id" and "text",
`recall(kinds="fact")` failed on the kind 'f', and a LangGraph namespace "memories" filed every
user's items under the user "e". One string now means one item (what a caller means by it), except
where guessing would decide whose data it is (a store namespace); a mapping is refused with an error
that names the argument and what to pass, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder

KEPT = "I prefer tea over coffee."


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.remember(KEPT, user_id="alice", categories=["food"])
        yield mem


def _texts(memory: Memory) -> list[str]:
    memory.wait_for_writes()
    return sorted(r.text for r in memory.list(include_invalid=True))


REFUSED: list[tuple[str, Callable[[Memory], Any], str]] = [
    ("remember_many a dict", lambda m: m.remember_many({"user_id": "bob", "text": "Bob likes jam."}, user_id="alice"),
     r"remember_many\(\)'s texts must be a list of statements.*got a dict with keys 'user_id', 'text'"),
    ("remember_many bytes", lambda m: m.remember_many(b"Likes jam.", user_id="alice"), "decode it to text first"),
    ("remember categories dict", lambda m: m.remember("Likes jam.", user_id="alice", categories={"food": 1}),
     "categories must be a category name or a list of them, got a dict"),
    ("recall kinds dict", lambda m: m.recall("tea", user_id="alice", kinds={"fact": True}),
     "kinds must be .*got a dict"),
    ("list kinds dict", lambda m: m.list(kinds={"fact": True}), "kinds must be .*got a dict"),
    ("recall scope dict", lambda m: m.recall("tea", user_id="alice", scope={"/a": 1}), "scope must be a path"),
    ("forget ids dict", lambda m: m.forget(ids={"id": "x"}), "ids must be a record id or a list"),
    ("forget scope dict", lambda m: m.forget(user_id="alice", scope={"/": 1}), "scope must be a path"),
    ("forget categories dict", lambda m: m.forget(user_id="alice", categories={"food": 1}),
     "categories must be .*got a dict"),
    ("update categories dict", lambda m: m.update(m.list()[0].id, categories={"drinks": 1}),
     "categories must be .*got a dict"),
    ("knowledge search source dict", lambda m: m.knowledge.search("tea", source={"handbook": 1}),
     "source must be a source name or a list of them"),
    ("knowledge add_files dict", lambda m: m.knowledge.add_files({"docs": 1}), "paths must be a file or directory"),
    ("notes get dict", lambda m: m.notes.get({"k": 1}, user_id="alice"), "keys must be a note key or a list"),
]


@pytest.mark.parametrize(("call", "says"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_a_mapping_given_for_a_list_is_refused_by_name_and_nothing_changes(
        memory: Memory, call: Callable[[Memory], Any], says: str) -> None:
    with pytest.raises(TypeError, match=says):
        call(memory)
    assert _texts(memory) == [KEPT]


def test_remember_many_with_a_record_dict_says_how_to_pass_it(memory: Memory) -> None:
    with pytest.raises(TypeError) as caught:
        memory.remember_many({"user_id": "bob", "text": "Bob likes jam."}, user_id="alice")
    assert "remember_many([record['text']], user_id=record['user_id'])" in str(caught.value)
    memory.drain_writes()
    assert _texts(memory) == [KEPT]
    assert memory.users() == ["alice"]


def test_one_string_is_one_item_where_a_list_is_taken(memory: Memory) -> None:
    # One kind, not the letters f, a, c, t.
    assert [m.record.text for m in memory.recall("tea", user_id="alice", kinds="fact")] == [KEPT]
    assert [r.text for r in memory.list(user_id="alice", kinds="fact")] == [KEPT]
    assert memory.list(user_id="alice", kinds="note") == []
    with pytest.raises(ValueError, match="kinds must be one of fact, lesson, knowledge, note; got 'facts'"):
        memory.recall("tea", user_id="alice", kinds="facts")
    # One statement, one record.
    (queued,) = memory.remember_many("Likes green tea.", user_id="alice")
    memory.drain_writes()
    assert memory.get(queued).text == "Likes green tea."
    # One key, not one per letter.
    memory.notes.put("fav", "Favourite drink: tea.", user_id="alice", data={"drink": "tea"})
    assert list(memory.notes.get("fav", user_id="alice")) == ["fav"]


def test_lessons_given_one_string_learn_one_lesson(memory: Memory) -> None:
    from mnemic import LessonPlace, LessonStore

    store = LessonStore(memory)
    place = LessonPlace("report", "draft")
    learned = store.learn("Cite a source for every figure.", user_id="alice", place=place)
    assert [lesson.text for lesson in learned] == ["Cite a source for every figure."]
    with pytest.raises(TypeError, match="texts must be a lesson or a list of lessons"):
        store.learn({"text": "Be brief."}, user_id="alice", place=place)
    withdrawn = store.withdraw(learned[0].id, user_id="alice", place=place, reason="the reviewer took it back",
                               actor="reviewer")
    assert [lesson.id for lesson in withdrawn] == [learned[0].id]


def test_a_langgraph_namespace_given_as_one_string_is_refused(memory: Memory) -> None:
    pytest.importorskip("langgraph")
    from langgraph.store.base import InvalidNamespaceError

    from mnemic.integrations.langgraph import MnemicStore

    store = MnemicStore(memory, user_position=1)
    # Read label by label, "memories" named the user "e": every user's items went to one owner.
    with pytest.raises(InvalidNamespaceError, match=r"namespace must be a tuple of labels.*\('memories',\)"):
        store.put("memories", "k", {"text": "Alice likes jam."})
    with pytest.raises(InvalidNamespaceError, match="namespace_prefix must be a tuple"):
        store.search("memories")
    with pytest.raises(InvalidNamespaceError, match="namespace must be a tuple"):
        store.get("memories", "k")
    assert memory.users() == ["alice"]
    store.put(("memories", "alice"), "k", {"text": "Alice likes jam."})
    assert store.get(("memories", "alice"), "k") is not None


def test_a_listing_condition_given_one_string_matches_that_label(memory: Memory) -> None:
    # Only narrows a listing, and LangGraph's own store suite writes it so: one label, not refused.
    pytest.importorskip("langgraph")
    from langgraph.store.base import ListNamespacesOp, MatchCondition

    from mnemic.integrations.langgraph import MnemicStore

    store = MnemicStore(memory)
    for namespace in (("docs", "public"), ("docs", "private")):
        store.put(namespace, "k", {"text": "A note."})
    (found,) = store.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", "public"),))])
    assert found == [("docs", "public")]


def test_crewai_memory_takes_one_statement_and_refuses_a_dict(memory: Memory) -> None:
    pytest.importorskip("crewai")
    from mnemic.integrations.crewai import CrewMemory

    crew_memory = CrewMemory(memory, user_id="alice")
    crew_memory.remember_many("Lives in Austin.")  # was stored as 16 one-letter facts
    crew_memory.drain_writes()
    assert _texts(memory) == sorted([KEPT, "Lives in Austin."])
    with pytest.raises(TypeError, match="contents must be a list of statements"):
        crew_memory.remember_many({"text": "Lives in Oslo."})
    assert _texts(memory) == sorted([KEPT, "Lives in Austin."])
    # A record id given alone is that id, not a string to find ids inside.
    austin = next(r.id for r in memory.list(user_id="alice") if "Austin" in r.text)
    assert crew_memory.forget(record_ids=austin + "-and-more", metadata_filter={"agent_role": None}) == 0
    assert crew_memory.forget(record_ids=austin) == 1
    assert _texts(memory) == [KEPT]


def test_crewai_knowledge_saves_one_text_as_one_document(memory: Memory) -> None:
    pytest.importorskip("crewai")
    from mnemic.integrations.crewai import MnemicKnowledgeStorage

    memory.set_policy(knowledge=True)
    storage = MnemicKnowledgeStorage(memory, collection_name="crew")
    storage.save("Refunds take five days.")  # was one knowledge chunk per letter
    assert [chunk.text for chunk in memory.knowledge.list()] == ["Refunds take five days."]
    with pytest.raises(TypeError, match="documents must be a list of texts"):
        storage.save({"text": "Returns are free."})
    with pytest.raises(TypeError, match="query must be a list of query texts"):
        storage.search({"refund": 1})
    assert memory.knowledge.count() == 1


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_checkpoint_saver_given_one_thread_id_prunes_that_thread_only(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("langgraph.checkpoint")
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

    from mnemic.checkpoints import JsonCheckpointSaver, SqliteCheckpointSaver

    saver = JsonCheckpointSaver(tmp_path / "threads") if kind == "json" else SqliteCheckpointSaver(
        tmp_path / "threads.sqlite")
    for thread in ("a", "b", "ab"):
        saver.put(generate_config(thread), generate_checkpoint(), generate_metadata(), {})
    # Read letter by letter, "ab" deleted the threads "a" and "b" and kept "ab".
    saver.prune("ab", strategy="delete")
    assert [saver.get_tuple(generate_config(t)) is not None for t in ("a", "b", "ab")] == [True, True, False]
    with pytest.raises(TypeError, match="thread_ids must be a thread id or a list of them"):
        saver.prune({"a": 1}, strategy="delete")
    with pytest.raises(TypeError, match="run_ids must be a run id or a list of them"):
        saver.delete_for_runs({"run": 1})
    assert saver.get_tuple(generate_config("a")) is not None
    if isinstance(saver, SqliteCheckpointSaver):
        saver.close()

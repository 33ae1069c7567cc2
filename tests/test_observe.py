"""observe() and memorize(): the automatic path for finished turns and the explicit session commit."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM, fact, facts_json

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.policy import PolicyError

AUSTIN = [{"role": "user", "content": "I moved to Austin last year and I prefer replies in bullet points."},
          {"role": "assistant", "content": "Noted, bullet points it is."}]


def texts(memory: Memory, user_id: str = "alice") -> list[str]:
    return sorted(r.text for r in memory.list(user_id=user_id, include_invalid=True))


def test_auto_extracts_in_the_background_without_delaying_the_caller(tmp_path: Path) -> None:
    llm = ScriptedLLM(default=facts_json(fact("Lives in Austin.", topic="personal_info")), delay=0.3)
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "warm-up"}], user_id="bob")  # starts the writer thread
        mem.drain_writes()
        started = time.perf_counter()
        assert mem.observe(AUSTIN, user_id="alice", session_id="s1", turn=4) is None
        elapsed = time.perf_counter() - started
        assert elapsed < 0.1, f"observe() took {elapsed * 1000:.0f} ms with a 300 ms model behind it"
        mem.drain_writes()
        (record,) = mem.list(user_id="alice")
        assert (record.text, record.session_id, record.turn, record.source_kind) == (
            "Lives in Austin.", "s1", 4, "conversation")
        assert mem.stats.llm_calls["extract"] == 2  # one per turn, warm-up included


def test_auto_without_an_llm_uses_the_deterministic_extractor(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        mem.observe(AUSTIN, user_id="alice")
        mem.drain_writes()
        assert texts(mem) == ["Moved to Austin last year.", "Prefers replies in bullet points."]
        assert mem.stats.llm_calls == {"extract": 0, "reconcile": 0, "recall": 0}


def test_explicit_writes_nothing_until_memorize(memory: Memory) -> None:
    memory.observe(AUSTIN, user_id="alice", session_id="s1", turn=1)
    memory.observe([{"role": "user", "content": "I have a boat."}], user_id="alice", session_id="s1", turn=2)
    memory.drain_writes()
    assert texts(memory) == []
    stored = memory.memorize("s1", user_id="alice")
    assert sorted(r.text for r in stored) == ["Has a boat.", "Moved to Austin last year.",
                                             "Prefers replies in bullet points."]
    assert {r.session_id for r in stored} == {"s1"}
    assert memory.memorize("s1", user_id="alice") == []  # committed once, not again
    assert len(texts(memory)) == 3


def test_memorize_is_per_user_and_session(memory: Memory) -> None:
    memory.observe(AUSTIN, user_id="alice", session_id="s1")
    memory.observe([{"role": "user", "content": "I have a boat."}], user_id="bob", session_id="s1")
    assert [r.text for r in memory.memorize("s1", user_id="bob")] == ["Has a boat."]
    assert texts(memory, "alice") == []
    assert memory.memorize("unknown", user_id="alice") == []


def test_memorize_with_messages(memory: Memory) -> None:
    stored = memory.memorize(user_id="alice", messages=AUSTIN, scope="/travel")
    assert sorted(r.text for r in stored) == ["Moved to Austin last year.", "Prefers replies in bullet points."]
    assert {r.scope for r in stored} == {"/travel"}


def test_memorize_makes_one_llm_call_for_a_small_session(tmp_path: Path) -> None:
    llm = ScriptedLLM(facts_json(fact("Lives in Austin.", topic="personal_info"), fact("Has a boat.")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        for turn in range(3):
            mem.observe([{"role": "user", "content": f"turn {turn}: I live in Austin and have a boat."}],
                        user_id="alice", session_id="s1", turn=turn)
        stored = mem.memorize("s1", user_id="alice")
        assert sorted(r.text for r in stored) == ["Has a boat.", "Lives in Austin."]
        assert len(llm.calls) == 1
        assert "turn 0" in llm.prompts[0] and "turn 2" in llm.prompts[0]


def test_memory_false_keeps_a_turn_out_of_every_write(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        mem.observe([{"role": "user", "content": "I have a boat."}], user_id="alice", session_id="s1",
                    memory=False)
        mem.drain_writes()
        assert texts(mem) == []
        assert mem.stats.turns_opted_out == 1
        # Committing the whole session later still leaves that turn out.
        session = [{"role": "user", "content": "I have a boat."}, {"role": "user", "content": "I live in Austin."}]
        stored = mem.memorize("s1", user_id="alice", messages=session)
        assert [r.text for r in stored] == ["Lives in Austin."]


def test_memory_false_under_explicit_is_left_out_of_the_session(memory: Memory) -> None:
    memory.observe([{"role": "user", "content": "I have a boat."}], user_id="alice", session_id="s1", turn=1,
                   memory=False)
    memory.observe([{"role": "user", "content": "I live in Austin."}], user_id="alice", session_id="s1", turn=2)
    assert [r.text for r in memory.memorize("s1", user_id="alice")] == ["Lives in Austin."]


def test_off_writes_nothing_and_memorize_refuses(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="off") as mem:
        mem.observe(AUSTIN, user_id="alice", session_id="s1")
        mem.drain_writes()
        assert texts(mem) == []
        with pytest.raises(PolicyError, match="mode=off"):
            mem.memorize("s1", user_id="alice")
        mem.set_policy(mode="explicit")
        assert mem.memorize("s1", user_id="alice") == []  # nothing was kept while memory was off


def test_a_policy_change_applies_to_the_next_turn(memory: Memory) -> None:
    memory.observe(AUSTIN, user_id="alice")
    memory.drain_writes()
    assert texts(memory) == []
    memory.set_policy(mode="auto")
    memory.observe(AUSTIN, user_id="alice")
    memory.drain_writes()
    assert len(texts(memory)) == 2


def test_an_llm_that_always_fails_does_not_lose_the_turn(tmp_path: Path) -> None:
    llm = ScriptedLLM(default=ConnectionError("no route to provider"))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe(AUSTIN, user_id="alice")
        mem.drain_writes()  # raises BackgroundWriteError if the turn's write failed
        assert texts(mem) == ["Moved to Austin last year.", "Prefers replies in bullet points."]
        assert (mem.stats.llm_fallbacks, mem.stats.llm_failures) == (1, 2)


@dataclass
class HumanMessage:
    content: str
    type: str = "human"


@dataclass
class AIMessage:
    content: str
    type: str = "ai"


def test_langchain_style_messages_and_anonymous_users(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        mem.observe([HumanMessage("I live in Austin."), AIMessage("Great city!")], user_id=None)
        mem.drain_writes()
        (record,) = mem.list(user_id=mem.anonymous_user_id)
        assert record.text == "Lives in Austin."
        assert mem.users() == [mem.anonymous_user_id]


def test_messages_are_captured_when_observe_is_called(tmp_path: Path) -> None:
    llm = ScriptedLLM(default=lambda messages: facts_json(), delay=0.2)
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        turn = [{"role": "user", "content": "I live in Austin."}]
        mem.observe(turn, user_id="alice")
        turn[0]["content"] = "I live in Paris."  # the caller reuses its list
        turn.append({"role": "user", "content": "I have a boat."})
        mem.drain_writes()
    assert "Austin" in llm.prompts[0] and "Paris" not in llm.prompts[0] and "boat" not in llm.prompts[0]


@pytest.mark.parametrize(("kwargs", "error", "fragment"), [
    ({"memory": "no"}, TypeError, "memory must be True or False"),
    ({"turn": "3"}, TypeError, "turn"),
    ({"session_id": 7}, TypeError, "session_id"),
    ({"user_id": ""}, ValueError, "user_id"),
])
def test_bad_observe_arguments(memory: Memory, kwargs: dict, error: type, fragment: str) -> None:
    arguments = {"user_id": "alice", **kwargs}
    with pytest.raises(error, match=fragment):
        memory.observe(AUSTIN, **arguments)


def test_memorize_needs_a_session_or_messages(memory: Memory) -> None:
    with pytest.raises(ValueError, match="session_id"):
        memory.memorize(user_id="alice")


def test_observe_after_close_is_refused(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto")
    mem.close()
    with pytest.raises(RuntimeError, match="closed"):
        mem.observe(AUSTIN, user_id="alice")


def test_close_flushes_queued_turns(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        for i in range(5):
            mem.observe([{"role": "user", "content": f"I have {i + 2} bikes."}], user_id="alice")
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        assert len(mem.list(user_id="alice")) == 5


def test_extract_gives_what_observe_would_keep_and_stores_nothing(tmp_path: Path) -> None:
    llm = ScriptedLLM(facts_json(fact("Lives in Austin.", topic="personal_info"),
                                 fact("Card number is 4111 1111 1111 1111."),
                                 fact("Has a secret plan.", topic="no_such_topic")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as mem:
        turn = [{"role": "user", "content": "I live in Austin; my API key is sk-proj-4fJq9XbT2LmN8pR7sV1wY3zA6cE0gH5k"}]
        assert mem.extract(turn) == ["Lives in Austin."]
        assert "sk-proj" not in llm.prompts[0]  # redacted before the model saw it
        assert mem.list() == []


def test_turns_buffered_for_memorize_are_forgotten_with_their_user(tmp_path: Path) -> None:
    # Under `explicit`, observe() buffers turns until memorize(). forget(user_id=) left the buffer
    # alone, so memorize() after it stored what the user had said before asking to be forgotten.
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="explicit") as mem:
        mem.observe(AUSTIN, user_id="alice", session_id="s1")
        mem.forget(user_id=" alice ")  # the id as a caller may pass it: the records' owner is "alice"
        assert mem.memorize("s1", user_id="alice") == []
        mem.observe([{"role": "user", "content": "I prefer tea to coffee."}], user_id="alice", session_id="s1")
        mem.memorize("s1", user_id="alice")
        assert not any("Austin" in t or "bullet" in t for t in texts(mem))
        assert any("tea" in t for t in texts(mem))


def test_a_turn_observed_through_another_memory_object_is_not_stored_after_its_user_is_forgotten(
        tmp_path: Path) -> None:
    # The second object's writer was extracting alice's turn when forget(user_id="alice") ran
    # through the first: the facts were written after the erasure, and alice was back.
    import threading

    extracting, release = threading.Event(), threading.Event()

    def slow_llm(messages: list[dict[str, str]]) -> str:
        extracting.set()
        release.wait(10)
        return facts_json(fact("Lives in Austin.", topic="personal_info"))

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as eraser, \
            Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto",
                   llm=ScriptedLLM(default=slow_llm)) as observer:
        observer.observe(AUSTIN, user_id="alice", session_id="s1")
        assert extracting.wait(10), "the scenario needs the extraction under way"
        eraser.forget(user_id="alice")
        release.set()
        observer.drain_writes(10)
        assert texts(eraser) == [] and texts(observer) == []

"""CrewMemory answers the calls CrewAI's own Memory documents as CrewAI's Memory does, checked side
by side with CrewAI's Memory (LanceDB, an offline embedder, no LLM) where the two must agree.
Found by running CrewAI's own memory tests, and the same calls on both, against CrewMemory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest

pytest.importorskip("crewai")

from crewai.memory.unified_memory import Memory as CrewAIMemory

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory

HASHED = HashEmbedder(64)
PLACED = {"categories": ["notes"], "importance": 0.5}  # given, so CrewAI's Memory asks no LLM


def hashed(texts: list[str]) -> list[list[float]]:
    return [list(map(float, vector)) for vector in HASHED.embed(list(texts))]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        yield mem


@pytest.fixture
def both(tmp_path: Path, store: Memory) -> Callable[..., list[Any]]:
    """CrewAI's Memory and a CrewMemory, built with the same options."""

    def build(**options: Any) -> list[Any]:
        model = MagicMock()
        model.supports_function_calling.return_value = False
        theirs = CrewAIMemory(storage=str(tmp_path / "lance"), llm=model, embedder=hashed, **options)
        return [theirs, CrewMemory(store, user_id="u", **options)]

    return build


def test_tree_lists_every_scope_by_its_full_path(both: Callable[..., list[Any]]) -> None:
    # Child lines named only their last segment ("  alpha (1 records)").
    trees = []
    for memory in both():
        memory.remember("Alpha note one.", scope="/team/alpha", **PLACED)
        memory.remember("Beta note two.", scope="/team/beta", **PLACED)
        memory.remember("A root note.", scope="/", **PLACED)
        trees.append((memory.tree(), memory.tree("/team")))
    assert trees[0] == trees[1]
    assert trees[1][1] == "/team (2 records)\n  /team/alpha (1 records)\n  /team/beta (1 records)"


def test_a_read_only_memory_still_erases_what_it_is_told_to(both: Callable[..., list[Any]]) -> None:
    # CrewAI: read-only leaves stored records unchanged, "explicit deletion through forget()/reset()
    # is unaffected"; CrewMemory raised PermissionError (crew.reset_memories() failed with it).
    left = []
    for memory in both():
        memory.remember("Alpha note one.", scope="/a", **PLACED)
        memory.remember("Beta note two.", scope="/b", **PLACED)
        memory.read_only = True
        assert memory.remember("Gamma note three.", scope="/a", **PLACED) is None
        forgotten = memory.forget(scope="/a")
        memory.reset()
        left.append((forgotten, len(memory.list_records())))
    assert left == [(1, 0), (1, 0)]


def test_extract_memories_called_directly_returns_the_statements_and_stores_nothing(store: Memory) -> None:
    # CrewAI's contract (a Flow's `self.remember_many(self.extract_memories(text))`): a list of
    # statements for the caller to store. CrewMemory returned [] for every text, so that pattern
    # stored nothing under the default policy.
    memory = CrewMemory(store, user_id="alice")
    text = "I live in Austin and I prefer window seats. My password is hunter2-Blue!"
    statements = memory.extract_memories(text)
    assert statements and any("Austin" in s for s in statements) and not any("hunter2" in s for s in statements)
    assert store.list(user_id="alice") == []
    memory.remember_many(statements)
    memory.drain_writes()
    assert sorted(r.text for r in store.list(user_id="alice")) == sorted(statements)


def test_extract_memories_under_off_extracts_nothing(store: Memory) -> None:
    store.set_policy(mode="off")
    assert CrewMemory(store, user_id="alice").extract_memories("I live in Austin.") == []


@pytest.mark.parametrize("role", ["Concierge", "Concierge\n", "Senior\nConcierge"])
def test_what_crewai_writes_after_a_kickoff_is_never_stored_under_explicit(store: Memory, role: str) -> None:
    # A role with a line break (YAML's `role: >` ends one with "\n") missed the after-kickoff
    # shape: the text was taken for a direct call, its statements returned, and CrewAI stored them.
    from crewai import Agent
    from crewai_helpers import ScriptedLLM

    llm = ScriptedLLM(responder=lambda prompt: "Thought: ok\nFinal Answer: You live in Austin.")
    agent = Agent(role=role, goal="Help", backstory="Kind.", llm=llm, memory=CrewMemory(store, user_id="erin"))
    agent.kickoff("I live in Austin and I prefer window seats.")
    store.drain_writes()
    assert store.effective_policy().mode == "explicit" and store.list(user_id="erin") == []

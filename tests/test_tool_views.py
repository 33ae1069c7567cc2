"""Memory's tools take a view as well as a Memory: a read-only slice gives an agent search over
its subtree and an honest answer when asked to remember (it used to answer "failed
(AttributeError ...)"). And the remember tool saves a fact, not a lone dot or a row of emoji."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.tools import core


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        yield mem


def test_the_tools_work_through_a_read_only_slice_and_say_honestly_that_it_is(memory: Memory) -> None:
    memory.set_policy(mode="explicit", knowledge=True)
    memory.remember("Alice's team uses Postgres.", user_id="alice", scope="/work")
    memory.remember("Alice's cat is called Miso.", user_id="alice", scope="/home")
    memory.knowledge.add("Postgres backups run nightly.", verbatim=True)
    work = memory.slice(["/work"], read_only=True)
    assert core.allowed_tools(work) == ["search_memory", "search_knowledge"]
    found = core.search_memory(work, "what does alice use, and her cat", user_id="alice")
    assert "Postgres" in found and "Miso" not in found
    assert core.remember(work, "Alice's team moved to MySQL.", user_id="alice") == core.READ_ONLY
    assert "MySQL" not in " ".join(r.text for r in memory.list(user_id="alice"))
    assert "nightly" in core.search_knowledge(work, "postgres backups")
    with pytest.raises(PermissionError, match="read-only"):  # a write is refused, never attempted
        work.knowledge.add("Backups moved to hourly.", verbatim=True)
    assert "hourly" not in " ".join(c.text for c in memory.knowledge.list())


def test_a_read_only_view_under_auto_says_it_saves_nothing_rather_than_that_it_saves_by_itself(
        memory: Memory) -> None:
    memory.set_policy(mode="auto")
    work = memory.slice(["/work"], read_only=True)
    assert core.remember(work, "Alice prefers tea.", user_id="alice") == core.READ_ONLY
    assert core.remember(memory, "Alice prefers tea.", user_id="alice") == core.REMEMBER_AUTO  # writable


@pytest.mark.parametrize("junk", [".", "1", "-", "\U0001F600" * 50, "  ...  "])
def test_the_remember_tool_saves_no_text_without_a_word(memory: Memory, junk: str) -> None:
    memory.set_policy(mode="explicit")
    assert core.remember(memory, junk, user_id="alice").startswith("Nothing was saved")
    assert memory.list(user_id="alice") == []


def test_a_search_through_a_view_takes_several_scopes_and_stays_inside_the_view(memory: Memory) -> None:
    # Memory.recall takes a list of scopes; a view takes the same, each one inside it (a tool given
    # a view, or a CrewMemory's root scope, searches this way).
    memory.set_policy(mode="explicit")
    memory.remember("Alice's note on the database.", user_id="alice", scope="/work/db")
    memory.remember("Alice's note on operations.", user_id="alice", scope="/work/ops")
    memory.remember("Alice's note on the garden.", user_id="alice", scope="/home")
    work = memory.slice(["/work"])
    found = core.search_memory(work, "Alice's note", user_id="alice", scope=["/db", "/home"])
    assert "database" in found and "operations" not in found and "garden" not in found
    everything = core.search_memory(work, "Alice's note", user_id="alice", scope=[])
    assert "database" in everything and "operations" in everything and "garden" not in everything

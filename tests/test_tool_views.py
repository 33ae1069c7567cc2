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


@pytest.mark.parametrize("junk", [".", "1", "-", "\U0001F600" * 50, "  ...  "])
def test_the_remember_tool_saves_no_text_without_a_word(memory: Memory, junk: str) -> None:
    memory.set_policy(mode="explicit")
    assert core.remember(memory, junk, user_id="alice").startswith("Nothing was saved")
    assert memory.list(user_id="alice") == []

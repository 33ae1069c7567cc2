"""forget() with a criterion that names nothing is refused, never read as "everything": an empty
scope used to mean the root, and a negative age a cutoff in the future, so each erased every
user's records."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.remember("Alice prefers tea.", user_id="alice", scope="/home")
        mem.remember("Bob prefers coffee.", user_id="bob", scope="/work")
        yield mem


@pytest.mark.parametrize("criteria", [
    {"scope": ""}, {"scope": "   "}, {"scope": []}, {"scope": [None]}, {"scope": ["/home", None]},
    {"scope": ["/home", ""]}, {"older_than": -5}, {"older_than": -10**6}, {"older_than": timedelta(days=-1)},
    {"user_id": "alice", "categories": []}, {"user_id": "alice", "scope": ""},
])
def test_a_criterion_naming_nothing_is_refused_and_nothing_is_erased(memory: Memory, criteria: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"names no|is negative"):
        memory.forget(**criteria)
    assert {r.text for u in ("alice", "bob") for r in memory.list(user_id=u)} == {
        "Alice prefers tea.", "Bob prefers coffee."}


def test_the_root_scope_still_erases_everything_in_it_when_asked_for(memory: Memory) -> None:
    assert memory.forget(scope="/").records == 2
    assert memory.forget(scope="/home").records == 0

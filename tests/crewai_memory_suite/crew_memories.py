"""How the copied CrewAI tests build the memory under test: `Memory(storage=...)` becomes a CrewMemory.

CrewAI's tests build `Memory(storage=<dir>, llm=..., embedder=..., root_scope=..., read_only=...)`.
The copies call `crew_memory` with the same arguments instead, which gives them what a CrewAI user
switching to mnemic writes: `CrewMemory(mnemic.Memory(<dir>, embedder=HashEmbedder()), user_id=USER,
root_scope=..., read_only=...)`.

- `storage` names one mnemic store. An embedded store has one writer per path, so a second
  CrewAI `Memory(storage=<same dir>)` in a test (a read-only view of the first, say) is a second
  CrewMemory over the same mnemic Memory, as two CrewAI Memories share one LanceDB directory.
  No `storage` is CrewAI's default store: `memory/` under CREWAI_STORAGE_DIR (a temporary
  directory the suite's conftest sets for every test).
- `llm` and `embedder` are CrewAI's (mocks, in these tests). CrewMemory refuses them: mnemic's
  LLM and embedder belong to the mnemic Memory. Tests that assert what CrewAI's Memory does with
  them are not applicable (conftest.NOT_APPLICABLE); the rest run with HashEmbedder (fast, offline)
  and no LLM (the rules).
- Every CrewMemory is bound to one user: CrewAI's Memory has no users, and a CrewMemory without
  one refuses to guess whose memory a call is for.

The conftest closes every mnemic Memory opened here when its test ends (`close_all`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory

USER = "crewai-suite-user"

_open: dict[Path, Memory] = {}


def crew_memory(storage: str | Path | None = None, llm: Any = None, embedder: Any = None,
                **fields: Any) -> CrewMemory:
    """The CrewMemory a test's `Memory(storage=..., **fields)` stands for (`llm`/`embedder` unused)."""
    return CrewMemory(_store(storage), user_id=USER, **fields)


def _store(storage: str | Path | None) -> Memory:
    if storage is None:
        storage = Path(os.environ["CREWAI_STORAGE_DIR"]) / "memory"
    path = Path(storage).resolve()
    if path not in _open:
        _open[path] = Memory(path, embedder=HashEmbedder())
    return _open[path]


def close_all() -> None:
    """Close every store opened for the test that just ended (all of them, even if one fails to close)."""
    stores = list(_open.values())
    _open.clear()
    with contextlib.ExitStack() as closing:
        for store in stores:
            closing.callback(store.close)

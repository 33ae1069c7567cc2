"""Saved run state for agent frameworks: checkpoints, kickoff outputs kept for replay, flow state.

Modules are named by framework. CrewAI: `crewai_json`, `crewai_sqlite`, `crewai_flow_state`,
`crewai_kickoffs` import CrewAI; `crewai_files`, `crewai_db`, `catalog` and `owners` import no
framework, so the operator CLI uses them. LangGraph (`pip install 'mnemic[langgraph]'`):
`JsonCheckpointSaver` (`langgraph_json`, a directory of JSON files, one process) and
`SqliteCheckpointSaver` (`langgraph_sqlite`, one SQLite file, any number of processes), full
`BaseCheckpointSaver`s, sync and async, that pass LangGraph's checkpointer conformance suite and
record each thread's user, so `memory.forget(user_id=...)` erases the user's threads.

Nothing is imported here: the LangGraph names resolve on first use, so `import mnemic` works
without any framework installed.

Secrets: kickoff outputs go to the run log, which redacts them (`core.runs`); a replay needs only
the outputs, so it works from the redacted text. Checkpoints and flow states are written
verbatim, because a restore must give back exactly the state that was saved: they are files at a
location the application chose, owned per user and erased with `forget(user_id=...)`.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "CorruptCheckpointError": ".langgraph_rows",
    "JsonCheckpointSaver": ".langgraph_json",
    "SqliteCheckpointSaver": ".langgraph_sqlite",
    "ThreadOwnerError": ".langgraph_rows",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})

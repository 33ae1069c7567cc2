"""Checkpoint savers kept beside a mnemic memory, named by framework.

LangGraph (`pip install 'mnemic[langgraph]'`): `JsonCheckpointSaver` (a directory of JSON files,
one process) and `SqliteCheckpointSaver` (one SQLite file, any number of processes), both full
`BaseCheckpointSaver`s, sync and async, that pass LangGraph's checkpointer conformance suite and
record each thread's user, so `memory.forget(user_id=...)` erases the user's threads.

Names are resolved lazily, so `import mnemic` works without any agent framework installed.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "JsonCheckpointSaver": ".langgraph_json",
    "SqliteCheckpointSaver": ".langgraph_sqlite",
    "ThreadOwnerError": ".langgraph_saver",
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

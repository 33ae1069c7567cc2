"""A CrewMemory's identity, kept where CrewAI's rebuilds cannot lose it.

CrewAI rebuilds a plain `Memory` from a memory's fields in `Agent.copy()` and on checkpoint
restore. The one field that survives is `storage`, a string, so a CrewMemory writes its identity
there (a marker: a reference to the live object plus the store's path, namespace and bound user).
When CrewAI builds the storage for a rebuilt copy, the storage factory installed here recognises
the marker and gives it a `DetachedStorage` instead of LanceDB, so nothing silently lands in a
second store; `attach.reattach()` later puts the live CrewMemory back.

Live CrewMemory objects are registered here (weakly) by their reference, so a marker can be
matched to the object it came from.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from crewai.memory.storage import factory as crewai_storage_factory

MARKER = "mnemic-crewmemory:"


class DetachedMemoryError(RuntimeError):
    """A plain CrewAI Memory rebuilt from a CrewMemory (by Agent.copy or a checkpoint restore)
    that could not be put back with a live CrewMemory."""


def marker(*, ref: str, path: str | None, namespace: str, user_id: str | None, user_key: str) -> str:
    """The `storage` string of a CrewMemory: what a rebuilt copy needs to find it again."""
    return MARKER + json.dumps({
        "v": 1, "ref": ref, "path": path, "namespace": namespace, "user_id": user_id, "user_key": user_key,
    }, sort_keys=True)


def marker_config(value: Any) -> dict[str, Any] | None:
    """The identity a `storage` value carries, or None when it is not a CrewMemory marker."""
    if not isinstance(value, str) or not value.startswith(MARKER):
        return None
    try:
        data = json.loads(value[len(MARKER):])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# -- live objects ------------------------------------------------------------------------------

_live: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_live_lock = threading.Lock()


def register_live(ref: str, memory: Any) -> None:
    with _live_lock:
        _live[ref] = memory


def live_memories() -> list[Any]:
    with _live_lock:
        return list(_live.values())


# -- the placeholder storage -------------------------------------------------------------------


class DetachedStorage:
    """The storage CrewAI gets when it rebuilds a plain Memory from a CrewMemory's fields.

    Built instead of LanceDB (CrewAI's fallback for an unknown storage string), so nothing silently
    lands in a second store; every use says how to re-attach.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    def message(self) -> str:
        where = self.config.get("path") or "a Chroma server"
        return (
            "this CrewAI Memory was rebuilt by CrewAI (Agent.copy or checkpoint restore) from a mnemic "
            f"CrewMemory (store {where}, namespace {self.config.get('namespace')!r}) and is not attached to "
            "it. Create the CrewMemory for that store, then call "
            "mnemic.integrations.crewai.reattach(crew_or_agent_or_flow) (or use restore_crew()); a crew "
            "or flow kickoff re-attaches by itself."
        )

    def close(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise DetachedMemoryError(self.message())

        return refuse


def _storage_factory(previous: Any) -> Any:
    def build(spec: str) -> Any:
        config = marker_config(spec)
        if config is not None:
            return DetachedStorage(config)
        return previous(spec) if previous is not None else None

    build.mnemic_crewai = True  # type: ignore[attr-defined]
    return build


def install_storage_factory() -> None:
    """Make CrewAI build a DetachedStorage for a marker; idempotent."""
    current = getattr(crewai_storage_factory, "_factory", None)
    if getattr(current, "mnemic_crewai", False):
        return
    # Chained: specs that are not ours go to whatever factory the application registered.
    crewai_storage_factory.set_memory_storage_factory(_storage_factory(current))


__all__ = [
    "MARKER",
    "DetachedMemoryError",
    "DetachedStorage",
    "install_storage_factory",
    "live_memories",
    "marker",
    "marker_config",
    "register_live",
]

"""Putting a live CrewMemory back where CrewAI rebuilt a plain Memory from one.

`Agent.copy()` (kickoff_for_each, train, test) and `Crew.from_checkpoint` rebuild a plain CrewAI
`Memory` from a CrewMemory's fields; its `storage` marker (see `identity.py`) says which store it
came from. `reattach()` swaps each such copy for the live CrewMemory over that store; every crew
and flow kickoff does so by itself, and `restore_crew()` does it right after a checkpoint restore.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from crewai.memory.memory_scope import MemoryScope, MemorySlice
from crewai.memory.unified_memory import Memory

from . import context
from .identity import DetachedMemoryError, DetachedStorage, live_memories, marker_config
from .memory import CrewMemory
from .persistence import after_restore

log = logging.getLogger("mnemic.crewai")


def is_detached(memory: Any) -> bool:
    """Whether `memory` is a plain CrewAI Memory CrewAI rebuilt from a CrewMemory."""
    return isinstance(memory, Memory) and not isinstance(memory, CrewMemory) \
        and marker_config(getattr(memory, "storage", None)) is not None


def find_live(config: Mapping[str, Any]) -> CrewMemory | None:
    """The live CrewMemory a marker names: the same object when it is still alive in this process,
    else one over the same store (path and namespace), preferring the one bound to the same user."""
    live = [(m, marker_config(m.storage) or {}) for m in live_memories() if isinstance(m, CrewMemory)]
    for candidate, identity in live:
        if identity.get("ref") == config.get("ref"):
            return candidate
    store = (config.get("path"), config.get("namespace"))
    same_store = [(c, i) for c, i in live if (i.get("path"), i.get("namespace")) == store]
    same_user = [c for c, i in same_store if i.get("user_id") == config.get("user_id")]
    if same_user:
        return same_user[0]
    return same_store[0][0] if len(same_store) == 1 else None


def reattach(target: Any, memory: CrewMemory | None = None) -> int:
    """Put a live CrewMemory back wherever CrewAI rebuilt a plain Memory from one.

    `target` is a Crew (its memory and every agent's), an Agent or a Flow. `memory` is used for
    every rebuilt memory when given; otherwise each is matched to a live CrewMemory over the same
    store. Returns how many were replaced; raises DetachedMemoryError when one has no match.
    """
    replaced = 0
    for holder, attribute, current in list(context.iter_memories(target)):
        if isinstance(current, (MemoryScope, MemorySlice)):
            backing = getattr(current, "_memory", None)
            if is_detached(backing):
                current.bind(memory or _live_for(backing))
                replaced += 1
            continue
        if not is_detached(current):
            continue
        setattr(holder, attribute, memory or _live_for(current))
        replaced += 1
    if replaced:
        log.info("re-attached %d mnemic CrewMemory reference(s) to %s", replaced, type(target).__name__)
    return replaced


def _live_for(rebuilt: Any) -> CrewMemory:
    config = marker_config(rebuilt.storage) or {}
    found = find_live(config)
    if found is None:
        raise DetachedMemoryError(DetachedStorage(config).message())
    return found


def restore_crew(config: Any, memory: CrewMemory | None = None) -> Any:
    """`Crew.from_checkpoint(config)` with mnemic kept as the memory (see `reattach`), the user the
    checkpoint was written for, and mnemic's checkpoint provider for what the crew saves next."""
    from crewai import Crew

    crew = Crew.from_checkpoint(config)
    reattach(crew, memory)
    after_restore(crew, config)
    return crew


__all__ = ["find_live", "is_detached", "reattach", "restore_crew"]

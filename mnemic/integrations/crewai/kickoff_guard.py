"""The check run at every Crew and Flow kickoff that uses a CrewMemory.

It re-attaches memories CrewAI rebuilt (see `attach.py`), makes `read_only` follow the memory
policy, and refuses a crew kickoff whose memory has no user. A memory that cannot be used (closed,
unreachable) refuses the kickoff too: CrewAI would only log each failed call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crewai.hooks.dispatch import HookAborted
from crewai.memory.memory_scope import MemoryScope, MemorySlice

from . import context
from .attach import reattach
from .identity import DetachedMemoryError
from .memory import CrewMemory


def check_kickoff(owner: Any, inputs: Mapping[str, Any]) -> None:
    """Registered with `context.install`: raises HookAborted to refuse the kickoff."""
    try:
        _prepare_kickoff(owner)
    except HookAborted:
        raise
    except Exception as exc:
        raise HookAborted(f"mnemic: {type(exc).__name__}: {exc}", source="mnemic") from exc


def _prepare_kickoff(owner: Any) -> None:
    try:
        reattach(owner)
    except DetachedMemoryError as exc:
        raise HookAborted(f"mnemic: {exc}", source="mnemic") from exc
    is_crew = hasattr(owner, "tasks") and hasattr(owner, "agents")
    seen: set[int] = set()
    for _, _, current in context.iter_memories(owner):
        mem = current._memory if isinstance(current, (MemoryScope, MemorySlice)) else current
        if not isinstance(mem, CrewMemory) or id(mem) in seen:
            continue
        seen.add(id(mem))
        mem.refresh_read_only()
        if not is_crew or mem.policy_mode() == "off":
            continue  # a flow uses memory only when asked (those calls say what is missing); off uses none
        try:
            user = mem.current_user_id()
        except (TypeError, ValueError) as exc:
            raise HookAborted(f"mnemic: bad user in kickoff inputs: {exc}", source="mnemic") from exc
        if user is None:
            raise HookAborted("mnemic: " + mem.missing_user_message(), source="mnemic")


__all__ = ["check_kickoff"]

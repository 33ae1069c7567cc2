"""mnemic's policy-aware tools in place of CrewAI's built-in memory tools, for CrewMemory only.

CrewAI gives an agent whose memory is set two tools of its own, "Search memory" and "Save to
memory" (`crewai.tools.memory_tools.create_memory_tools`, called from `Crew._add_memory_tools`,
`Agent.kickoff` and `LiteAgent`). Over a CrewMemory they would not follow mnemic's policy: under
`off` the search answers "No relevant memories found." (a tool that always returns nothing teaches
the model to stop calling tools) and under `auto` the model is still offered a save.

CrewAI has no extension point for this (its tool hooks can block a call but cannot change which
tools are offered), and all three callers import `create_memory_tools` from its module at call
time. So `install()` replaces that one module attribute, once per process, with a wrapper that
returns `mnemic.tools.crewai.policy_tools(...)` when the memory is a CrewMemory (directly, through
a `MemoryScope`/`MemorySlice` view, or a copy CrewAI rebuilt from one) and hands every other memory
to CrewAI's own function unchanged. What the model is offered:

- `off`: no memory tool (`search_knowledge` only when the knowledge store is on);
- `auto`: `search_memory` (the extractor captures facts, so no `remember`);
- `explicit`: `search_memory` and `remember` (not `remember` for a read-only memory or slice);
- `search_knowledge` whenever the policy's `knowledge` is on.

Every tool acts through the view of mnemic that CrewAI's memory object stands for (`crew_view`):
the CrewMemory's `root_scope` (and a scope's root or a slice's scopes inside it, joined as
CrewMemory joins them), read-only when the CrewMemory or the slice is. So no tool reads or writes
where the memory's own `recall` and `remember` would not; a writable slice's `remember` writes into
its first scope, which its search covers. The tools an agent lists itself (`Remember()`, ...) act
through the same view, given one of these objects or finding it from the run (`runtime.py`).

The tools keep mnemic's names. `search_memory` is what CrewAI's own "Search memory" is called in the
model's tool list (CrewAI sanitises tool names), so CrewAI's prompt ("use the Search memory tool")
still points at it; and with mnemic's names CrewAI's merge treats them as the tools an agent may
list itself (`SearchMemory()`, `Remember()`, `SearchKnowledge()`), so the model never sees two
tools for one job. The user comes from the run (the kickoff's inputs, `for_user()` or the bound
user) exactly as for those tools. Building the tools never raises into CrewAI: on a failure the
model is offered no memory tools, and the log says why.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

from crewai.memory.memory_scope import MemoryScope, MemorySlice
from crewai.tools import BaseTool

from ...core.scopes import ROOT
from ...core.views import MemoryView
from ...tools.crewai import RunContext, policy_tools
from .attach import find_live, is_detached
from .identity import marker_config
from .memory import CrewMemory

log = logging.getLogger("mnemic.crewai")

_install_lock = threading.Lock()


def _backing(memory: Any) -> CrewMemory | None:
    """The CrewMemory behind a CrewAI memory object, or None when it is not mnemic's."""
    if is_detached(memory):
        # A copy CrewAI rebuilt (Agent.copy, checkpoint restore) and nothing re-attached yet.
        return find_live(marker_config(getattr(memory, "storage", None)) or {})
    return memory if isinstance(memory, CrewMemory) else None


def crew_view(memory: Any) -> tuple[CrewMemory, MemoryView] | None:
    """The CrewMemory behind a CrewAI memory object (a CrewMemory, a scope or slice of one, or a
    copy CrewAI rebuilt from one) and the view of mnemic it stands for, or None for any other."""
    view = memory if isinstance(memory, (MemoryScope, MemorySlice)) else None
    backing = _backing(getattr(view, "_memory", None) if view is not None else memory)
    if backing is None:
        return None
    read_only = backing.writes_refused()
    if isinstance(view, MemorySlice):
        # CrewMemory joins each of a slice's scopes under its root_scope, as its recall does.
        paths = [backing.scope_path(s) for s in view.scopes] or [backing.scope_path(None)]
        read_only = read_only or view.read_only
    elif isinstance(view, MemoryScope):
        paths = [backing.scope_path(getattr(view, "_root", None) or ROOT)]
    else:
        paths = [backing.scope_path(None)]
    return backing, MemoryView(backing.mnemic, paths, read_only=read_only)


def resolve_memory(memory: Any) -> RunContext | None:
    """What a mnemic tool given `memory` acts through: its view (see `crew_view`) and the user
    the CrewMemory serves now; None when it is not mnemic's."""
    found = crew_view(memory)
    if found is None:
        return None
    backing, view = found
    return RunContext(memory=view, user_id=backing.current_user_id())


def tools_for(memory: Any) -> list[BaseTool] | None:
    """mnemic's tools for a CrewAI memory (a CrewMemory or a view of one), or None for any other.
    The tools hold the scope or slice itself (the live CrewMemory for a rebuilt copy) and act
    through its view (`resolve_memory`) at each call, so a scope CrewAI re-binds is followed."""
    found = crew_view(memory)
    if found is None:
        return None
    return policy_tools(memory if isinstance(memory, (MemoryScope, MemorySlice)) else found[0])


def _wrap(original: Callable[[Any], list[BaseTool]]) -> Callable[[Any], list[BaseTool]]:
    @functools.wraps(original)
    def create_memory_tools(memory: Any) -> list[BaseTool]:
        try:
            tools = tools_for(memory)
        except Exception:
            log.exception("could not build mnemic's memory tools for %s; offering none", type(memory).__name__)
            return []
        return original(memory) if tools is None else tools

    create_memory_tools.mnemic_crewai = True  # type: ignore[attr-defined]
    return create_memory_tools


def install() -> None:
    """Route `crewai.tools.memory_tools.create_memory_tools` through `tools_for`, once per process.
    Memories that are not mnemic's get CrewAI's own tools, exactly as before."""
    from crewai.tools import memory_tools as crewai_memory_tools

    with _install_lock:
        current = crewai_memory_tools.create_memory_tools
        if getattr(current, "mnemic_crewai", False):
            return
        crewai_memory_tools.create_memory_tools = _wrap(current)  # type: ignore[assignment]


__all__ = ["crew_view", "install", "resolve_memory", "tools_for"]

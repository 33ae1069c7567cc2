"""How mnemic hooks into a CrewAI process: done once, on import of `mnemic.integrations.crewai`.

- the storage factory that keeps CrewAI's rebuilt copies of a CrewMemory off LanceDB;
- the kickoff and step hooks (`context.py`) with the kickoff check (`kickoff_guard.py`);
- how mnemic's tools find the memory, the user and the session of the run executing them;
- mnemic's tools in place of CrewAI's built-in memory tools for CrewMemory (`tools.py`).

Everything here is idempotent and does nothing for runs that use no mnemic memory.
"""

from __future__ import annotations

from typing import Any

from crewai.memory.memory_scope import MemoryScope, MemorySlice

from . import context
from .identity import install_storage_factory
from .kickoff_guard import check_kickoff, kickoff_ended
from .memory import CrewMemory


def _memory_of(candidate: Any) -> CrewMemory | None:
    if isinstance(candidate, (MemoryScope, MemorySlice)):
        candidate = getattr(candidate, "_memory", None)
    return candidate if isinstance(candidate, CrewMemory) else None


def resolve_run() -> Any:
    """What a mnemic tool running inside CrewAI needs: the CrewMemory of the agent (or crew, or
    flow) executing now, the user, and the kickoff as the session."""
    from ...tools.crewai import RunContext

    step = context.current_task_step()
    kick = context.current_crew_kickoff() or context.current_kickoff()
    found: CrewMemory | None = _memory_of(getattr(step.agent, "memory", None)) if step is not None else None
    if found is None and kick is not None:
        found = _memory_of(getattr(kick.owner, "_memory", None)) or _memory_of(getattr(kick.owner, "memory", None))
    if found is None:
        flow_step = context.current_flow_step()
        if flow_step is not None:
            found = _memory_of(getattr(flow_step.flow, "memory", None))
    user: str | None = None
    if found is not None:
        user = found.current_user_id()
    else:
        for outer in reversed(context.kickoffs()):
            value = outer.inputs.get("user_id")
            if isinstance(value, str) and value.strip():
                user = value.strip()
                break
    return RunContext(memory=found.mnemic if found is not None else None, user_id=user,
                      session_id=kick.kickoff_id if kick is not None else None)


def install() -> None:
    """Process-wide set-up, idempotent (see the module docstring)."""
    install_storage_factory()
    context.install(check_kickoff, kickoff_ended)
    from ...tools import crewai as crewai_tools
    from . import tools as builtin_tools

    crewai_tools.set_run_context_resolver(resolve_run)
    builtin_tools.install()


__all__ = ["install", "resolve_run"]

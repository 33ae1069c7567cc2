"""How mnemic hooks into a CrewAI process: done once, on import of `mnemic.integrations.crewai`.

- the storage factory that keeps CrewAI's rebuilt copies of a CrewMemory off LanceDB;
- the kickoff and step hooks (`context.py`) with the kickoff check (`kickoff_guard.py`);
- how mnemic's tools find the memory, the user and the session of the run executing them;
- mnemic's tools in place of CrewAI's built-in memory tools for CrewMemory (`tools.py`).

Everything here is idempotent and does nothing for runs that use no mnemic memory.
"""

from __future__ import annotations

from typing import Any

from . import context
from .identity import install_storage_factory
from .kickoff_guard import check_kickoff, kickoff_ended
from .tools import crew_view, resolve_memory


def resolve_run() -> Any:
    """What a mnemic tool running inside CrewAI needs: the view of mnemic the memory of the agent
    (or crew, or flow) executing now stands for (its root_scope, scope or slice, and read_only:
    a tool the agent lists itself must not reach past them), the user, and the kickoff as the
    session."""
    from ...tools.crewai import RunContext

    step = context.current_task_step()
    kick = context.current_crew_kickoff() or context.current_kickoff()
    found = crew_view(getattr(step.agent, "memory", None)) if step is not None else None
    if found is None and kick is not None:
        found = crew_view(getattr(kick.owner, "_memory", None)) or crew_view(getattr(kick.owner, "memory", None))
    if found is None:
        flow_step = context.current_flow_step()
        if flow_step is not None:
            found = crew_view(getattr(flow_step.flow, "memory", None))
    user: str | None = None
    if found is not None:
        user = found[0].current_user_id()
    else:
        for outer in reversed(context.kickoffs()):
            value = outer.inputs.get("user_id")
            if isinstance(value, str) and value.strip():
                user = value.strip()
                break
    return RunContext(memory=found[1] if found is not None else None, user_id=user,
                      session_id=kick.kickoff_id if kick is not None else None)


def install() -> None:
    """Process-wide set-up, idempotent (see the module docstring)."""
    install_storage_factory()
    context.install(check_kickoff, kickoff_ended)
    from ...tools import crewai as crewai_tools
    from . import tools as builtin_tools

    crewai_tools.set_run_context_resolver(resolve_run)
    crewai_tools.set_memory_resolver(resolve_memory)
    builtin_tools.install()


__all__ = ["install", "resolve_run"]

"""mnemic's memory tools as CrewAI tools, for agents that list their own tools:

    Agent(..., tools=[SearchMemory(), Remember(), SearchKnowledge()])

These are classes (note the parentheses). What they do lives once in `mnemic.tools.core`; here
they only find the memory and the user. Both can be given (`SearchMemory(memory=..., user_id=...)`);
otherwise they come from the run: the CrewMemory of the agent, crew or flow executing the tool,
and the user that memory is serving (see `mnemic.integrations.crewai`). A tool the policy does not
allow answers honestly, and no tool ever raises into the agent loop.

A tool acts through what it was given, or what the run holds, with that object's own limits: a
mnemic view (`memory.scope(...)`, `memory.slice(...)`) keeps its paths and read-only; a CrewMemory
(or `crew_memory.scope(...)` / `.slice(...)`) keeps its `root_scope` and `read_only`, exactly as
its own `recall` and `remember` do. So a tool's `scope` is inside that view or root scope, and the
remember tool of a read-only memory answers that memory is read-only.

Where CrewAI adds memory tools itself (a Crew, Agent or LiteAgent whose memory is a CrewMemory),
the integration gives it `policy_tools(...)` instead of CrewAI's "Search memory"/"Save to memory":
only the tools the policy offers (none under `off`, `search_memory` under `auto`, plus `remember`
under `explicit`, plus `search_knowledge` when the knowledge store is on). They keep these names,
so CrewAI's merge treats them as the same tools an agent lists itself: in a Crew they replace the
agent's own, in `Agent.kickoff`/LiteAgent the agent's own win; either way one tool per name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    from crewai.tools import BaseTool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "mnemic's CrewAI tools need CrewAI: pip install 'mnemic[crewai]'"
    ) from exc
from pydantic import BaseModel, Field

from ..core.memory import Memory
from ..core.views import MemoryView
from . import core as tool_logic

log = logging.getLogger("mnemic.tools")

NOT_CONFIGURED = (
    "Memory is not set up for this agent: no mnemic memory was given to the tool and the crew, agent "
    "or flow running it has no CrewMemory."
)


@dataclass(frozen=True)
class RunContext:
    """What a tool learns from the run executing it (or from the memory object it was given):
    the memory it acts through (a Memory, or a view confining it) and the user."""

    memory: Memory | MemoryView | None = None
    user_id: str | None = None
    session_id: str | None = None


# The CrewAI integration registers how to read the running crew, agent and kickoff, and how to read
# a CrewAI memory object a tool was given; the tools do not import it (adapters sit above the tools).
_resolver: Callable[[], RunContext | None] | None = None
_memory_resolver: Callable[[Any], RunContext | None] | None = None


def set_run_context_resolver(resolver: Callable[[], RunContext | None] | None) -> None:
    global _resolver
    _resolver = resolver


def set_memory_resolver(resolver: Callable[[Any], RunContext | None] | None) -> None:
    """How to read a memory object that is neither a Memory nor a view of one (a CrewMemory, or a
    CrewAI scope or slice of one): the view of mnemic it stands for and the user it serves now, or
    None when it is not mnemic's."""
    global _memory_resolver
    _memory_resolver = resolver


def _given(memory: Any) -> tuple[Memory | MemoryView, str | None]:
    """The memory a tool was given, as the Memory or view it acts through, and the user it serves
    now (None for a bare Memory or view, which leave the user to the run)."""
    if isinstance(memory, (Memory, MemoryView)):
        return memory, None
    found = _memory_resolver(memory) if _memory_resolver is not None else None
    if found is None or found.memory is None:
        raise TypeError("memory must be a mnemic Memory, a view of one, or a CrewMemory (or a scope or slice "
                        f"of it), got {type(memory).__name__}")
    return found.memory, found.user_id


def _run_context() -> RunContext:
    if _resolver is None:
        return RunContext()
    try:
        return _resolver() or RunContext()
    except Exception:
        log.exception("could not read the CrewAI run context")
        return RunContext()


class _QueryInput(BaseModel):
    query: str = Field(description="What to look for, as a short question or keywords.")


class _FactInput(BaseModel):
    fact: str = Field(description="One short, standalone fact, e.g. 'Prefers replies in bullet points.'")


class _MnemicTool(BaseTool):
    memory: Any = Field(default=None, exclude=True,
                        description="A mnemic Memory or view, or a CrewMemory (or a scope or slice of it); "
                                    "by default the running crew's.")
    user_id: str | None = Field(default=None, exclude=True,
                                description="The user; by default the one the run is for.")
    scope: Any = Field(default=None, exclude=True,
                       description="Scope (or scopes, for searches) the tool works in, inside the memory's "
                                   "own view or root scope; default all of it.")

    def _target(self) -> tuple[Memory | MemoryView | None, str | None, str | None]:
        """(the memory this call acts through, user, session)."""
        run = _run_context()
        if self.memory is None:
            return run.memory, self.user_id or run.user_id, run.session_id
        if isinstance(self.memory, (Memory, MemoryView)):
            return self.memory, self.user_id or run.user_id, run.session_id
        # A CrewMemory (or a scope or slice of one) serves the user it names now, as its own calls do.
        memory, user = _given(self.memory)
        return memory, self.user_id or user, run.session_id


class SearchMemory(_MnemicTool):
    """Facts about the person the agent is helping; "Memory is off" when the policy says so."""

    name: str = "search_memory"
    description: str = tool_logic.SEARCH_MEMORY_DESCRIPTION
    args_schema: type[BaseModel] = _QueryInput

    def _run(self, query: Any = None, **kwargs: Any) -> str:
        try:
            memory, user, _ = self._target()
            if memory is None:
                return NOT_CONFIGURED
            return tool_logic.search_memory(memory, query if query is not None else kwargs.get("queries"),
                                            user_id=user, scope=self.scope)
        except Exception as exc:
            log.exception("SearchMemory failed")
            return f"Memory search failed ({type(exc).__name__}: {exc}). Continue without memory."


class Remember(_MnemicTool):
    """Stores one fact when the user asks; says so honestly under `auto` and `off`."""

    name: str = "remember"
    description: str = tool_logic.REMEMBER_DESCRIPTION
    args_schema: type[BaseModel] = _FactInput

    def _run(self, fact: Any = None, **kwargs: Any) -> str:
        try:
            memory, user, session = self._target()
            if memory is None:
                return NOT_CONFIGURED
            scope = self.scope if isinstance(self.scope, str) else None
            return tool_logic.remember(memory, fact if fact is not None else kwargs.get("content"),
                                       user_id=user, scope=scope, session_id=session)
        except Exception as exc:
            log.exception("Remember failed")
            return f"Saving to memory failed ({type(exc).__name__}: {exc}). The fact was not stored."


class SearchKnowledge(_MnemicTool):
    """The agent's shared knowledge (the same for every user); says so when the store is off."""

    name: str = "search_knowledge"
    description: str = tool_logic.SEARCH_KNOWLEDGE_DESCRIPTION
    args_schema: type[BaseModel] = _QueryInput

    def _run(self, query: Any = None, **kwargs: Any) -> str:
        try:
            memory, _, _ = self._target()
            if memory is None:
                return NOT_CONFIGURED
            return tool_logic.search_knowledge(memory, query if query is not None else kwargs.get("queries"))
        except Exception as exc:
            log.exception("SearchKnowledge failed")
            return f"Knowledge search failed ({type(exc).__name__}: {exc}). Continue without it."


def memory_tools() -> list[BaseTool]:
    """All three tools, resolving memory and user from the run."""
    return [SearchMemory(), Remember(), SearchKnowledge()]


def policy_tools(memory: Any, *, user_id: str | None = None, scope: Any = None, write_scope: str | None = None,
                 writable: bool = True) -> list[BaseTool]:
    """The tools the memory policy offers for `memory` (a mnemic Memory or a CrewMemory), for
    frameworks that build the tool list themselves: see `mnemic.tools.core.allowed_tools`.

    `memory` may also be a view of a Memory or a CrewAI scope or slice of a CrewMemory; the tools
    act through it, inside its paths or root scope. `scope` limits searches (a scope or a list of
    scopes, inside that), `write_scope` is where `remember` writes (default `scope` when it is one
    scope), and `writable=False` leaves `remember` out, as a read-only memory or view does by
    itself. The policy is read now; each tool still checks it again when called."""
    target, _ = _given(memory)
    tools: list[BaseTool] = []
    for name in tool_logic.allowed_tools(target):
        if name == "remember":
            if not writable:
                continue
            where = write_scope if write_scope is not None else (scope if isinstance(scope, str) else None)
            tools.append(Remember(memory=memory, user_id=user_id, scope=where))
        elif name == "search_memory":
            tools.append(SearchMemory(memory=memory, user_id=user_id, scope=scope))
        elif name == "search_knowledge":
            tools.append(SearchKnowledge(memory=memory, user_id=user_id))
    return tools


__all__ = [
    "NOT_CONFIGURED",
    "Remember",
    "RunContext",
    "SearchKnowledge",
    "SearchMemory",
    "memory_tools",
    "policy_tools",
    "set_memory_resolver",
    "set_run_context_resolver",
]

"""The memory tools as langchain-core tools, for LangGraph and LangChain agents.

    from mnemic.tools.langchain import memory_tools
    agent = create_react_agent(model, tools=[*memory_tools(memory)])
    agent.invoke({"messages": [...]}, {"configurable": {"user_id": "alice", "thread_id": "t1"}})

The behaviour is `mnemic.tools.core`'s; this module only finds the caller. The user comes from the
run, never from an argument the model fills: `config["configurable"]["user_id"]`, or a LangGraph
runtime context (`context_schema` + `invoke(..., context=Ctx(user_id=...))`) with a `user_id`
attribute or key. A run that names no user gets a refusal the model can read, not a shared store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

try:
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "mnemic's LangChain tools need langchain-core: pip install 'mnemic[langgraph]'"
    ) from exc
from pydantic import BaseModel, Field

from ..core.validation import ASCII_WHITESPACE, invisible_character
from . import core

if TYPE_CHECKING:
    from ..core.memory import Memory

log = logging.getLogger("mnemic.tools.langchain")

USER_KEY = "user_id"
CONFLICTING_USERS = ("Memory is unavailable: this run names two different users (in its configuration and "
                     "in its runtime context), so it is not clear whose memory to use.")


class IdentityError(ValueError):
    """The run says who the user is in a way that cannot be used (two different users, a bad id)."""


@dataclass(frozen=True)
class RunIdentity:
    """Who a run is for, read from its config and runtime context."""

    user_id: str | None
    session_id: str | None
    memory: bool  # False when the run opted this turn out of every memory write


def _from_context(context: Any, key: str) -> Any:
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def _runtime_contexts(configurable: Mapping[str, Any]) -> list[Any]:
    """Runtime contexts LangGraph placed in the config (its Runtime object rides there)."""
    try:
        from langgraph.runtime import Runtime
    except ImportError:
        return []
    return [value.context for value in configurable.values() if isinstance(value, Runtime)]


def given_user_ids(config: Mapping[str, Any] | None, *, user_key: str = USER_KEY) -> list[tuple[str, Any]]:
    """Every place a run's config names its user, as (where, the value as given, unchecked): the
    configurable key, then each runtime context. For callers that judge the values themselves (a
    checkpoint saver refuses an empty one instead of reading it as no user)."""
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    given = [(f"config['configurable'][{user_key!r}]", configurable.get(user_key))]
    given += [(f"the runtime context's {user_key!r}", _from_context(context, user_key))
              for context in _runtime_contexts(configurable)]
    return given


def _clean_id(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise IdentityError(f"Memory is unavailable: the run's {what} must be a string, got {type(value).__name__}.")
    text = str(value).strip(ASCII_WHITESPACE)
    if invisible_character(text) is not None:
        raise IdentityError(f"Memory is unavailable: the run's {what} contains an invisible character.")
    return text or None


def run_identity(config: Mapping[str, Any] | None, *, user_key: str = USER_KEY,
                 context: Any = None) -> RunIdentity:
    """The user, session and opt-out of a run. `context` is a runtime context given directly
    (middleware gets one without a config); otherwise it is looked up in the config. Raises
    IdentityError when the config and the context name different users."""
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    contexts = [context] if context is not None else _runtime_contexts(configurable)
    named = {_clean_id(_from_context(c, user_key), "user id") for c in contexts}
    named.add(_clean_id(configurable.get(user_key), "user id"))
    named.discard(None)
    if len(named) > 1:
        raise IdentityError(CONFLICTING_USERS)
    user = next(iter(named), None)
    session = _clean_id(configurable.get("thread_id"), "thread id")
    opt = configurable.get("memory", True)
    return RunIdentity(user_id=user, session_id=session, memory=opt is not False)


class SearchMemoryInput(BaseModel):
    query: str = Field(description="What you want to know about the user, as a short question or keywords.")


class RememberInput(BaseModel):
    fact: str = Field(description="One short, standalone fact to remember, e.g. 'Prefers replies in bullet points.'")


class SearchKnowledgeInput(BaseModel):
    query: str = Field(description="A short question or keywords.")


def search_memory_tool(memory: Memory, *, user_key: str = USER_KEY, limit: int = 5) -> BaseTool:
    """`search_memory(query)`: the caller's own facts relevant to the query, as context."""

    def search_memory(query: str, config: RunnableConfig) -> str:
        try:
            who = run_identity(config, user_key=user_key)
        except IdentityError as exc:
            return str(exc)
        return core.search_memory(memory, query, user_id=who.user_id, limit=limit)

    async def asearch_memory(query: str, config: RunnableConfig) -> str:
        return await asyncio.to_thread(search_memory, query, config)

    return StructuredTool.from_function(
        func=search_memory, coroutine=asearch_memory, name="search_memory",
        description=core.SEARCH_MEMORY_DESCRIPTION, args_schema=SearchMemoryInput,
    )


def remember_tool(memory: Memory, *, user_key: str = USER_KEY) -> BaseTool:
    """`remember(fact)`: store one fact the user asked to be remembered (explicit mode), with the
    run's thread as its session."""

    def remember(fact: str, config: RunnableConfig) -> str:
        try:
            who = run_identity(config, user_key=user_key)
        except IdentityError as exc:
            return str(exc)
        if who.user_id is not None and not who.memory:
            return "Nothing was saved: this conversation asked not to be remembered."
        return core.remember(memory, fact, user_id=who.user_id, session_id=who.session_id)

    async def aremember(fact: str, config: RunnableConfig) -> str:
        return await asyncio.to_thread(remember, fact, config)

    return StructuredTool.from_function(
        func=remember, coroutine=aremember, name="remember",
        description=core.REMEMBER_DESCRIPTION, args_schema=RememberInput,
    )


def search_knowledge_tool(memory: Memory, *, limit: int = 5) -> BaseTool:
    """`search_knowledge(query)`: the agent's shared knowledge (the same for every user)."""

    def search_knowledge(query: str) -> str:
        return core.search_knowledge(memory, query, limit=limit)

    async def asearch_knowledge(query: str) -> str:
        return await asyncio.to_thread(search_knowledge, query)

    return StructuredTool.from_function(
        func=search_knowledge, coroutine=asearch_knowledge, name="search_knowledge",
        description=core.SEARCH_KNOWLEDGE_DESCRIPTION, args_schema=SearchKnowledgeInput,
    )


def memory_tools(memory: Memory, *, user_key: str = USER_KEY, limit: int = 5,
                 allowed_only: bool = False) -> list[BaseTool]:
    """`search_memory`, `remember` and `search_knowledge`, bound to `memory`.

    A graph binds its tools once, so by default all three are returned and each answers honestly
    when the policy in force at call time does not allow it ("Memory is off for this agent").
    `allowed_only=True` returns only the tools the policy allows now (see `core.allowed_tools`),
    for graphs rebuilt when the policy changes.
    """
    tools = {
        "search_memory": search_memory_tool(memory, user_key=user_key, limit=limit),
        "remember": remember_tool(memory, user_key=user_key),
        "search_knowledge": search_knowledge_tool(memory, limit=limit),
    }
    if allowed_only:
        return [tools[name] for name in core.allowed_tools(memory)]
    return list(tools.values())


__all__ = [
    "IdentityError",
    "RunIdentity",
    "memory_tools",
    "remember_tool",
    "run_identity",
    "search_knowledge_tool",
    "search_memory_tool",
]

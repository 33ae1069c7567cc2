"""mnemic for LangGraph: memory tools, a `BaseStore`, and recall/extraction hooks.

    from mnemic import Memory
    from mnemic.integrations.langgraph import MemoryHooks, MnemicStore, memory_tools

    memory = Memory("./.mnemic")
    hooks = MemoryHooks(memory)
    agent = create_react_agent(model, tools=memory_tools(memory), prompt=hooks.prompt,
                               post_model_hook=hooks.post_model_hook, store=MnemicStore(memory))
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"user_id": "alice", "thread_id": "t1"}})

`human_feedback` / `review_node` (from `mnemic.flows`) add a review step that learns lessons.

Every piece takes the user from the run (`config["configurable"]["user_id"]` or a runtime
context's `user_id`), never from the model. See `store.py` for how store namespaces map to users.
"""

from __future__ import annotations

try:
    import langchain_core  # noqa: F401
    import langgraph.store.base  # noqa: F401
except ImportError as exc:
    raise ImportError(
        "mnemic.integrations.langgraph needs LangGraph and langchain-core: pip install 'mnemic[langgraph]'"
    ) from exc

from ...core.notes import NoteRefusedError
from ...flows.langgraph import human_feedback, review_node
from ...tools.langchain import (
    IdentityError,
    RunIdentity,
    memory_tools,
    remember_tool,
    run_identity,
    search_knowledge_tool,
    search_memory_tool,
)
from .hooks import CONTEXT_MESSAGE_ID, MemoryHooks, is_final_answer
from .store import MnemicStore

# DESIGN.md's name for the store; mnemic.core.store has an internal ChromaStore of its own.
ChromaStore = MnemicStore

__all__ = [
    "CONTEXT_MESSAGE_ID",
    "ChromaStore",
    "IdentityError",
    "MemoryHooks",
    "MnemicStore",
    "NoteRefusedError",
    "RunIdentity",
    "human_feedback",
    "is_final_answer",
    "memory_tools",
    "remember_tool",
    "review_node",
    "run_identity",
    "search_knowledge_tool",
    "search_memory_tool",
]

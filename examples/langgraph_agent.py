"""A LangGraph agent with long-term memory: tools, recall/extraction hooks and the store, per user.

Offline by default: the chat model is a small rule-based stand-in (it searches memory for every
question and answers from what it finds), the embeddings are all-MiniLM-L6-v2 computed locally,
and facts are extracted with mnemic's deterministic extractor. With a real model configured, the
same graph runs on it:

    python examples/langgraph_agent.py [STORE_DIR]
    MNEMIC_LANGGRAPH_MODEL=openai:gpt-4o-mini python examples/langgraph_agent.py   # needs `pip install
        langchain langchain-openai` and a key; MNEMIC_LLM=gpt-4o-mini also lets the model extract facts

What happens: alice tells the agent where she lives in one conversation; memory distils it in the
background (policy mode "auto"). The application also stores a preference of hers through the
LangGraph store. In a new conversation the agent knows both; bob, asking the same, gets nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from mnemic import Memory
from mnemic.integrations.langgraph import MemoryHooks, MnemicStore, memory_tools


class OfflineModel(BaseChatModel):
    """A stand-in chat model: asks search_memory about every question, answers from the result,
    and acknowledges statements. Enough to watch memory work without an API key."""

    @property
    def _llm_type(self) -> str:
        return "mnemic-offline-example"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            found = [line[2:].split(" (remembered")[0] for line in str(last.content).splitlines()
                     if line.startswith("- ")]
            reply = AIMessage("From memory: " + "; ".join(found) if found else "I don't know that yet.")
        elif isinstance(last, HumanMessage) and str(last.content).rstrip().endswith("?"):
            reply = AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": str(last.content)},
                                               "id": f"call-{len(messages)}"}])
        else:
            reply = AIMessage("Got it.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def chat_model() -> BaseChatModel:
    name = os.environ.get("MNEMIC_LANGGRAPH_MODEL")
    if not name:
        return OfflineModel()
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        sys.exit("MNEMIC_LANGGRAPH_MODEL needs the langchain package and its provider: "
                 "pip install langchain langchain-openai (or another provider)")
    return init_chat_model(name)


def main() -> None:
    keep = len(sys.argv) > 1
    folder = Path(sys.argv[1]) if keep else Path(tempfile.mkdtemp(prefix="mnemic-langgraph-"))
    memory = Memory(folder, llm=os.environ.get("MNEMIC_LLM") or None)
    try:
        memory.set_policy(mode="auto")  # distil every finished turn into facts, in the background
        hooks = MemoryHooks(memory, system_prompt="You are a concise assistant. Use search_memory to recall "
                                                  "facts about the person you are talking to.")
        store = MnemicStore(memory, index={"fields": ["text"]})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
            agent = create_react_agent(chat_model(), tools=memory_tools(memory), prompt=hooks.prompt,
                                       post_model_hook=hooks.post_model_hook, store=store,
                                       checkpointer=InMemorySaver())

        def say(user: str, thread: str, text: str) -> str:
            config = {"configurable": {"user_id": user, "thread_id": thread}}
            result = agent.invoke({"messages": [HumanMessage(text)]}, config)
            answer = str(result["messages"][-1].content)
            print(f"  {user} [{thread}]: {text}\n  agent: {answer}")
            return answer

        print("Conversation 1")
        say("alice", "monday", "Hi! I live in Lisbon and I work as a marine biologist.")
        hooks.flush()  # only so the example can print what was learnt; invoke() never waits for it
        # The application writes through LangGraph's store too: ("memories", "alice") is alice's memory.
        store.put(("memories", "alice"), "seat", {"text": "Alice prefers window seats on long flights."})
        print("  memory now holds for alice: " + "; ".join(r.text for r in memory.list(user_id="alice")))

        print("\nConversation 2 (a new thread)")
        say("alice", "tuesday", "Where do I live?")
        say("alice", "tuesday", "Which seats do I prefer on flights?")

        print("\nAnother user")
        say("bob", "wednesday", "Where do I live?")
    finally:
        memory.close()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

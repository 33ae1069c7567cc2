"""Real LangGraph agents with a scripted chat model: the memory tools, the hooks and the store.

No network and no LLM: the model is a FakeMessagesListChatModel that replays tool calls and
answers, and records every input it was given, so a test can see exactly what memory showed it.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from example_runner import run_example
from pydantic import BaseModel, Field

pytest.importorskip("langgraph.prebuilt")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.prebuilt import create_react_agent

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.policy import PROFILE_HEADER
from mnemic.integrations.langgraph import CONTEXT_MESSAGE_ID, MemoryHooks, MnemicStore, memory_tools
from mnemic.tools import core
from mnemic.tools.langchain import CONFLICTING_USERS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*create_react_agent.*")


class ScriptedModel(FakeMessagesListChatModel):
    """Replays `responses` in order and keeps every message list it was called with."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def call(name: str, call_id: str = "c1", **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def run(user: str | None = None, thread: str = "t1", **configurable: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, **configurable}
    if user is not None:
        conf["user_id"] = user
    return {"configurable": conf}


def ask(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def tool_answers(result: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in result["messages"] if isinstance(m, ToolMessage)]


def agent(memory: Memory, responses: list[AIMessage], **kwargs: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel(responses=responses)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(model, tools=memory_tools(memory), **kwargs)
    return graph, model


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    # tmpfs when available: Chroma syncs each write to disk, ~10x slower here.
    base = Path(tempfile.mkdtemp(prefix="mnemic-test-", dir="/dev/shm")) if Path("/dev/shm").is_dir() else tmp_path
    try:
        with Memory(base / "m", embedder=HashEmbedder()) as mem:
            yield mem
    finally:
        if base != tmp_path:
            shutil.rmtree(base, ignore_errors=True)


# -- tools ------------------------------------------------------------------------------------


def test_the_tools_offer_the_model_only_its_own_arguments(memory: Memory) -> None:
    schemas = {t.name: t.tool_call_schema for t in memory_tools(memory)}
    arguments = {name: set(s.model_json_schema()["properties"]) for name, s in schemas.items()
                 if isinstance(s, type) and issubclass(s, BaseModel)}
    assert arguments == {"search_memory": {"query"}, "remember": {"fact"}, "search_knowledge": {"query"}}


def test_an_agent_remembers_and_recalls_a_fact_for_the_runs_user(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Prefers replies in bullet points."),
                              call("search_memory", "c2", query="how does the user like replies?"),
                              AIMessage("Noted.")])
    result = graph.invoke(ask("Remember that I prefer bullet points."), run("alice", thread="thread-7"))
    saved, found = tool_answers(result)
    assert saved == "Saved to memory: Prefers replies in bullet points."
    assert found.startswith(core.CONTEXT_NOTE) and "Prefers replies in bullet points." in found
    (record,) = memory.list(user_id="alice")
    assert (record.text, record.author, record.source_kind, record.session_id) == (
        "Prefers replies in bullet points.", "agent", "remember_tool", "thread-7")
    assert memory.users() == ["alice"]


def test_the_model_cannot_choose_whose_memory_it_writes(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Owns a boat.", user_id="bob"),
                              call("search_memory", "c2", query="boat", user_id="bob"), AIMessage("ok")])
    saved, found = tool_answers(graph.invoke(ask("I own a boat"), run("alice")))
    assert saved == "Saved to memory: Owns a boat."
    assert "Owns a boat." in found
    assert [r.text for r in memory.list(user_id="alice")] == ["Owns a boat."]
    assert memory.users() == ["alice"]


def test_a_run_without_a_user_is_refused_not_shared(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    graph, _ = agent(memory, [call("search_memory", query="where do I live?"),
                              call("remember", "c2", fact="Likes jazz."), AIMessage("ok")])
    found, saved = tool_answers(graph.invoke(ask("where do I live?"), run(None)))
    assert found == core.NO_USER and saved == core.NO_USER
    assert memory.users() == ["alice"]


def test_two_users_never_see_each_others_memories(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Lives in Austin."), AIMessage("ok"),
                              call("search_memory", query="where does the user live? Austin"), AIMessage("ok")])
    graph.invoke(ask("I live in Austin"), run("alice"))
    (found,) = tool_answers(graph.invoke(ask("where do I live?"), run("bob", thread="t2")))
    assert found == core.NO_MEMORIES
    assert memory.list(user_id="bob") == []


@dataclass
class Ctx:
    user_id: str


def test_a_runtime_context_names_the_user(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Likes jazz."), AIMessage("ok")], context_schema=Ctx)
    (saved,) = tool_answers(graph.invoke(ask("I like jazz"), run(None), context=Ctx(user_id="carol")))
    assert saved == "Saved to memory: Likes jazz."
    assert [r.text for r in memory.list(user_id="carol")] == ["Likes jazz."]


def test_two_different_users_in_one_run_are_refused(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Likes jazz."), AIMessage("ok")], context_schema=Ctx)
    (saved,) = tool_answers(graph.invoke(ask("I like jazz"), run("alice"), context=Ctx(user_id="bob")))
    assert saved == CONFLICTING_USERS
    assert memory.users() == []


def test_policy_off_makes_the_tools_say_so(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    memory.set_policy(mode="off")
    graph, _ = agent(memory, [call("search_memory", query="Austin"), call("remember", "c2", fact="Likes jazz."),
                              call("search_knowledge", "c3", query="refunds"), AIMessage("ok")])
    assert tool_answers(graph.invoke(ask("hi"), run("alice"))) == [
        core.MEMORY_OFF, core.REMEMBER_OFF, core.KNOWLEDGE_OFF]
    assert [r.text for r in memory.list(user_id="alice")] == ["Lives in Austin."]


def test_under_auto_remember_says_memory_is_automatic(memory: Memory) -> None:
    memory.set_policy(mode="auto")
    graph, _ = agent(memory, [call("remember", fact="Likes jazz."), AIMessage("ok")])
    assert tool_answers(graph.invoke(ask("remember I like jazz"), run("alice"))) == [core.REMEMBER_AUTO]


def test_search_knowledge_reads_the_shared_store_when_it_is_on(memory: Memory) -> None:
    memory.set_policy(knowledge=True)
    memory.knowledge.add("Refunds are processed within 5 business days.", verbatim=True)
    graph, _ = agent(memory, [call("search_knowledge", query="how long do refunds take"), AIMessage("ok")])
    (found,) = tool_answers(graph.invoke(ask("refunds?"), run(None)))
    assert found.startswith(core.KNOWLEDGE_NOTE) and "5 business days" in found


def test_allowed_only_offers_what_the_policy_allows(memory: Memory) -> None:
    assert [t.name for t in memory_tools(memory, allowed_only=True)] == ["search_memory", "remember"]
    memory.set_policy(mode="auto", knowledge=True)
    assert [t.name for t in memory_tools(memory, allowed_only=True)] == ["search_memory", "search_knowledge"]
    memory.set_policy(mode="off", knowledge=False)
    assert memory_tools(memory, allowed_only=True) == []


def test_a_turn_opted_out_of_memory_saves_nothing(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Likes jazz."), AIMessage("ok")])
    (saved,) = tool_answers(graph.invoke(ask("remember I like jazz"), run("alice", memory=False)))
    assert saved.startswith("Nothing was saved")
    assert memory.users() == []


def test_the_tools_work_in_async_runs(memory: Memory) -> None:
    graph, _ = agent(memory, [call("remember", fact="Likes jazz."), call("search_memory", "c2", query="jazz"),
                              AIMessage("ok")])
    saved, found = tool_answers(asyncio.run(graph.ainvoke(ask("I like jazz"), run("alice"))))
    assert saved == "Saved to memory: Likes jazz." and "Likes jazz." in found


# -- hooks: recall before the model -----------------------------------------------------------


def context_of(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if m.id == CONTEXT_MESSAGE_ID]


def test_the_prompt_puts_relevant_memories_before_the_users_message_as_context(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    memory.remember("Owns a Mastercraft boat.", user_id="alice")
    hooks = MemoryHooks(memory, system_prompt="You are concise.")
    graph, model = agent(memory, [AIMessage("You live in Austin.")], prompt=hooks.prompt)
    result = graph.invoke(ask("Where do I live? Austin?"), run("alice"))
    (seen,) = model.calls
    assert isinstance(seen[0], SystemMessage) and seen[0].content == "You are concise."
    (note,) = context_of(seen)
    assert isinstance(note, HumanMessage)
    assert seen.index(note) == len(seen) - 2 and seen[-1].content == "Where do I live? Austin?"
    assert str(note.content).startswith(PROFILE_HEADER)
    assert "Lives in Austin." in str(note.content)
    assert not any(isinstance(m, SystemMessage) and "Austin" in str(m.content) for m in seen)
    assert context_of(result["messages"]) == []  # never written to the graph's messages


def test_the_profile_is_injected_when_the_policy_asks_for_it(memory: Memory) -> None:
    memory.remember("Owns a Mastercraft boat.", user_id="alice")
    hooks = MemoryHooks(memory)
    question = [HumanMessage("What is the capital of France?")]
    assert context_of(hooks.context_messages(question, run("alice"))) == []
    memory.set_policy(inject="profile")
    (note,) = context_of(hooks.context_messages(question, run("alice")))
    assert "Owns a Mastercraft boat." in str(note.content)
    assert context_of(MemoryHooks(memory, profile=False).context_messages(question, run("alice"))) == []


def test_the_profile_follows_every_change_to_the_users_memory(memory: Memory) -> None:
    memory.set_policy(inject="profile")
    hooks = MemoryHooks(memory)
    question = [HumanMessage("What is the capital of France?")]

    def profile() -> str:
        notes = context_of(hooks.context_messages(question, run("alice")))
        return str(notes[0].content) if notes else ""

    boat = memory.remember("Owns a boat.", user_id="alice")
    assert "Owns a boat." in profile()
    jazz = memory.remember("Likes jazz.", user_id="alice")
    assert "Likes jazz." in profile() and "Owns a boat." in profile()
    assert boat is not None and jazz is not None
    memory.invalidate(jazz.id, reason="not any more")
    assert "Likes jazz." not in profile()
    memory.delete(boat.id)
    assert profile() == ""
    memory.remember("Is on a short trip.", user_id="alice", ttl_seconds=1)
    assert "short trip" in profile()
    time.sleep(1.2)
    assert profile() == ""


def test_no_context_without_a_user_for_another_user_or_under_off(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    memory.set_policy(inject="profile")
    hooks = MemoryHooks(memory)
    question = [HumanMessage("Where do I live? Austin?")]
    assert len(context_of(hooks.context_messages(question, run("alice")))) == 1
    assert hooks.context_messages(question, run(None)) == question
    assert hooks.context_messages(question, run("bob")) == question
    memory.set_policy(mode="off")
    assert hooks.context_messages(question, run("alice")) == question


def test_alices_memories_never_reach_bobs_model(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    memory.remember("Lives in Boston.", user_id="bob")
    hooks = MemoryHooks(memory, profile=True)
    graph, model = agent(memory, [AIMessage("a"), AIMessage("b")], prompt=hooks.prompt)
    graph.invoke(ask("Where do I live?"), run("alice"))
    graph.invoke(ask("Where do I live?"), run("bob", thread="t2"))
    alice_seen, bob_seen = (" ".join(str(m.content) for m in call) for call in model.calls)
    assert "Austin" in alice_seen and "Boston" not in alice_seen
    assert "Boston" in bob_seen and "Austin" not in bob_seen


def test_the_pre_model_hook_gives_the_model_context_without_touching_the_messages(memory: Memory) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    hooks = MemoryHooks(memory)
    graph, model = agent(memory, [call("search_memory", query="Austin"), AIMessage("Austin.")],
                         pre_model_hook=hooks.pre_model_hook)
    result = graph.invoke(ask("Do I live in Austin?"), run("alice"))
    assert all(len(context_of(seen)) == 1 for seen in model.calls) and len(model.calls) == 2
    assert context_of(result["messages"]) == []


@pytest.mark.parametrize("path", ["prompt", "middleware"])
def test_the_prompt_and_the_middleware_keep_memory_out_of_the_threads_checkpoints(
        memory: Memory, tmp_path: Path, path: str) -> None:
    """What README recommends over pre_model_hook (whose `llm_input_messages` LangGraph
    checkpoints): a fact deleted after the turn is left in no checkpoint of the thread."""
    from mnemic.checkpoints import SqliteCheckpointSaver

    door = memory.remember("My door code is on Quillfeather Lane 77.", user_id="alice")
    hooks = MemoryHooks(memory)
    saver = SqliteCheckpointSaver(tmp_path / "threads.sqlite", memory=memory)
    responses = [call("remember", fact="Likes tea."), AIMessage("Noted.")]
    if path == "prompt":
        graph, model = agent(memory, responses, prompt=hooks.prompt, checkpointer=saver)
    else:
        agents = pytest.importorskip("langchain.agents")
        model = ScriptedModel(responses=responses)
        graph = agents.create_agent(model, tools=memory_tools(memory), middleware=[hooks.middleware()],
                                    checkpointer=saver)
    graph.invoke(ask("Where is my door on Quillfeather?"), run("alice"))
    assert all("Lane 77" in str(context_of(seen)) for seen in model.calls) and len(model.calls) == 2
    memory.delete(door.id)
    assert not any("Lane 77" in str(snapshot.values) for snapshot in graph.get_state_history(run("alice")))
    saver.close()
    assert not any(b"Lane 77" in f.read_bytes() for f in tmp_path.glob("threads.sqlite*"))


def test_a_turn_with_tool_calls_recalls_once(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    memory.remember("Lives in Austin.", user_id="alice")
    hooks = MemoryHooks(memory)
    recalls: list[str] = []
    original = memory.recall

    def counting(query: str, **kwargs: Any) -> Any:
        recalls.append(query)
        return original(query, **kwargs)

    monkeypatch.setattr(memory, "recall", counting)
    graph, model = agent(memory, [call("search_memory", query="Austin"), AIMessage("Austin."), AIMessage("Hi.")],
                         prompt=hooks.prompt, post_model_hook=hooks.post_model_hook)
    graph.invoke(ask("Do I live in Austin?"), run("alice"))
    assert len(model.calls) == 2 and all(len(context_of(seen)) == 1 for seen in model.calls)
    assert recalls == ["Do I live in Austin?", "Austin"]  # the hook once, then the tool
    graph.invoke(ask("Do I live in Austin?"), run("alice", thread="t2"))  # a new turn recalls again
    assert len(recalls) == 3


def test_a_cached_turn_context_follows_the_policy_thread_and_question(memory: Memory) -> None:
    # Found by an attack: the turn cache served its context after memory was turned off mid-turn
    # (a policy change moves no revision), and to another thread's question under a reused id.
    memory.set_policy(mode="explicit")
    memory.remember("Alice owns a Mastercraft boat.", user_id="alice")
    memory.remember("Alice's dentist is Dr Okonkwo.", user_id="alice")
    hooks = MemoryHooks(memory, recall_limit=1)
    boat = [HumanMessage("What boat do I own?", id="m1")]
    assert "Mastercraft" in str(context_of(hooks.context_messages(boat, run("alice")))[0].content)
    dentist = [HumanMessage("Who is my dentist?", id="m1")]  # a client that numbers its own messages
    assert "Okonkwo" in str(context_of(hooks.context_messages(dentist, run("alice", thread="t2")))[0].content)
    memory.set_policy(mode="off")
    assert context_of(hooks.context_messages(boat, run("alice"))) == []


def test_a_fact_invalidated_during_the_turn_leaves_the_next_model_calls_context(memory: Memory) -> None:
    """The turn's context is cached for its later model calls, but not past a change: the agent's
    own correction retires the old fact, and the model's next call must not be told it again."""
    old = memory.remember("My account manager is Anna Smith.", user_id="alice")
    hooks = MemoryHooks(memory, profile=True)
    graph, model = agent(memory, [call("remember", fact="My account manager is now Tom Baker."), AIMessage("Noted.")],
                         prompt=hooks.prompt)
    graph.invoke(ask("Who is my account manager? It changed to Tom Baker."), run("alice"))
    assert memory.get(old.id).state == "invalid"
    first, second = (" ".join(str(m.content) for m in context_of(seen)) for seen in model.calls)
    assert "Anna Smith" in first
    assert "Anna Smith" not in second and "Tom Baker" in second


def test_a_fact_that_expires_during_the_turn_leaves_the_next_model_calls_context(memory: Memory) -> None:
    """Expiry changes nothing the turn's cache is keyed on: a fact whose time runs out while a tool
    works must still be gone from the model's next call, as it is from recall."""
    memory.remember("Alice is staying at the Hotel Zebulon this week.", user_id="alice", ttl_seconds=1)

    @tool
    def book_taxi(destination: str) -> str:
        """Books a taxi (slowly)."""
        time.sleep(1.2)
        return "booked"

    hooks = MemoryHooks(memory)
    model = ScriptedModel(responses=[call("book_taxi", destination="hotel"), AIMessage("Your taxi is booked.")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(model, tools=[book_taxi], prompt=hooks.prompt)
    graph.invoke(ask("Book me a taxi to my hotel, the Zebulon."), run("alice"))
    first, second = (" ".join(str(m.content) for m in context_of(seen)) for seen in model.calls)
    assert "Hotel Zebulon" in first
    assert "Hotel Zebulon" not in second
    assert memory.recall("Hotel Zebulon", user_id="alice") == []


def test_a_recall_failure_leaves_memory_out_instead_of_failing_the_run(memory: Memory,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = MemoryHooks(memory)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("chroma is down")

    monkeypatch.setattr(memory, "recall", broken)
    graph, model = agent(memory, [AIMessage("fine")], prompt=hooks.prompt)
    assert graph.invoke(ask("hello"), run("alice"))["messages"][-1].content == "fine"
    assert context_of(model.calls[0]) == []


# -- hooks: extraction after the answer -------------------------------------------------------


def extracting_agent(memory: Memory, responses: list[AIMessage]) -> tuple[Any, ScriptedModel, MemoryHooks]:
    hooks = MemoryHooks(memory)
    graph, model = agent(memory, responses, prompt=hooks.prompt, post_model_hook=hooks.post_model_hook)
    return graph, model, hooks


def test_under_auto_the_finished_turn_is_distilled_for_its_user(memory: Memory) -> None:
    memory.set_policy(mode="auto")
    graph, _, hooks = extracting_agent(memory, [AIMessage("Nice to meet you!")])
    graph.invoke(ask("I live in Austin and I prefer green tea."), run("alice", thread="s1"))
    hooks.flush()
    facts = {r.text: r for r in memory.list(user_id="alice")}
    assert set(facts) == {"Lives in Austin.", "Prefers green tea."}
    record = facts["Lives in Austin."]
    assert (record.author, record.source_kind, record.session_id, record.turn) == ("user", "conversation", "s1", 1)
    assert memory.list(user_id="bob") == []


def test_only_the_final_answer_schedules_extraction(memory: Memory) -> None:
    memory.set_policy(mode="auto")
    graph, _, hooks = extracting_agent(memory, [call("search_memory", query="tea"), AIMessage("ok"),
                                                AIMessage("ok again")])
    before = memory.stats.turns_observed
    graph.invoke(ask("I prefer green tea."), run("alice"))
    assert memory.stats.turns_observed == before + 1
    graph.invoke(ask("I live in Austin."), run("alice"))
    hooks.flush()
    assert memory.stats.turns_observed == before + 2
    assert {r.text for r in memory.list(user_id="alice")} == {"Prefers green tea.", "Lives in Austin."}


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"The user's flight to {city} is on Friday."


def test_memorys_own_tool_results_are_not_extracted_again(memory: Memory) -> None:
    memory.remember("Prefers green tea.", user_id="alice")
    memory.set_policy(mode="auto")
    hooks = MemoryHooks(memory)
    model = ScriptedModel(responses=[call("search_memory", query="tea"), call("weather", "c2", city="Oslo"),
                                     AIMessage("Enjoy Oslo.")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(model, tools=[weather, *memory_tools(memory)], post_model_hook=hooks.post_model_hook)
    graph.invoke(ask("What do I drink?"), run("alice"))
    hooks.flush()
    pending = [r for r in memory.list(user_id="alice") if r.state == "pending"]
    assert [r.source_kind for r in pending] == ["tool_result"]  # the weather tool's, waiting for review
    assert "Memories about this user" not in " ".join(r.text for r in memory.list(user_id="alice"))


def test_extraction_follows_the_policy_and_the_per_turn_opt_out(memory: Memory) -> None:
    graph, _, hooks = extracting_agent(memory, [AIMessage("ok")] * 3)
    graph.invoke(ask("I live in Austin."), run("alice", thread="s1"))  # explicit: kept for memorize only
    hooks.flush()  # a turn still queued when the policy changes follows the new policy (README)
    memory.set_policy(mode="auto")
    graph.invoke(ask("I prefer green tea."), run("alice", thread="s2", memory=False))
    graph.invoke(ask("I own a boat."), run(None))  # no user: nothing is written anywhere
    hooks.flush()
    assert memory.users() == []
    memory.set_policy(mode="explicit")
    assert [r.text for r in memory.memorize("s1", user_id="alice")] == ["Lives in Austin."]


def test_hooks_work_in_async_runs(memory: Memory) -> None:
    memory.set_policy(mode="auto")
    memory.remember("Owns a Mastercraft boat.", user_id="alice")
    graph, model, hooks = extracting_agent(memory, [AIMessage("ok")])
    asyncio.run(graph.ainvoke(ask("I live in Austin. Do I own a Mastercraft boat?"), run("alice")))
    hooks.flush()
    assert "Mastercraft" in str(context_of(model.calls[0])[0].content)
    assert "Lives in Austin." in {r.text for r in memory.list(user_id="alice")}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_hooks_as_langchain_agents_middleware(memory: Memory, mode: str) -> None:
    agents = pytest.importorskip("langchain.agents")
    memory.set_policy(mode="auto")
    memory.remember("Owns a Mastercraft boat.", user_id="alice")
    hooks = MemoryHooks(memory)
    model = ScriptedModel(responses=[call("search_memory", query="boat"), AIMessage("Yes, a Mastercraft.")])
    graph = agents.create_agent(model, tools=memory_tools(memory), system_prompt="Be brief.",
                                middleware=[hooks.middleware()])
    question = ask("I live in Austin. Do I own a boat?")
    result = graph.invoke(question, run("alice")) if mode == "sync" else asyncio.run(graph.ainvoke(question,
                                                                                                  run("alice")))
    hooks.flush()
    assert all(len(context_of(seen)) == 1 for seen in model.calls) and len(model.calls) == 2
    assert sum(isinstance(m, SystemMessage) for m in model.calls[0]) == 1
    assert context_of(result["messages"]) == []
    assert "Lives in Austin." in {r.text for r in memory.list(user_id="alice")}


def test_the_readme_create_agent_setup_keeps_threads_per_user(memory: Memory, tmp_path: Path) -> None:
    """create_agent with the hooks, MnemicStore and a mnemic checkpointer, as the README shows it."""
    agents = pytest.importorskip("langchain.agents")
    from mnemic.checkpoints import SqliteCheckpointSaver

    hooks = MemoryHooks(memory)
    model = ScriptedModel(responses=[AIMessage("Hello Alice."), AIMessage("You said hi before.")])
    saver = SqliteCheckpointSaver(tmp_path / "threads.sqlite", memory=memory)
    graph = agents.create_agent(model, tools=memory_tools(memory), middleware=[hooks.middleware()],
                                store=MnemicStore(memory), checkpointer=saver)
    graph.invoke(ask("hi"), run("alice", thread="t1"))
    second = graph.invoke(ask("what did I say?"), run("alice", thread="t1"))
    hooks.flush()
    assert [m.content for m in second["messages"] if isinstance(m, HumanMessage)] == ["hi", "what did I say?"]

    report = memory.forget(user_id="alice")
    assert report.retained["threads"] == 1
    assert graph.get_state(run("alice", thread="t1")).values == {}
    saver.close()


# -- the store inside an agent ----------------------------------------------------------------


@tool
def save_preference(preference: str) -> str:
    """Save a preference of the user in the graph's store."""
    from langgraph.config import get_config

    user = get_config()["configurable"]["user_id"]
    get_store().put(("memories", user), "preference", {"text": preference})
    return "saved"


def test_mnemic_store_is_a_drop_in_for_create_react_agent(memory: Memory) -> None:
    store = MnemicStore(memory, index={"fields": ["text"]})
    model = ScriptedModel(responses=[call("save_preference", preference="Prefers window seats."),
                                     call("search_memory", "c2", query="window seats"), AIMessage("ok")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(model, tools=[save_preference, *memory_tools(memory)], store=store)
    saved, found = tool_answers(graph.invoke(ask("I like window seats"), run("alice")))
    assert saved == "saved"
    item = store.get(("memories", "alice"), "preference")
    assert item is not None and item.value == {"text": "Prefers window seats."}
    # What the graph keeps in the store is alice's memory: her tools find it, bob's do not.
    assert "Prefers window seats." in found
    assert memory.list(user_id="bob") == []


# -- the example --------------------------------------------------------------------------------


@pytest.mark.minilm
@pytest.mark.slow
def test_the_example_runs_offline(tmp_path: Path) -> None:
    out = run_example("langgraph_agent.py", tmp_path / "store", unset=("MNEMIC_LANGGRAPH_MODEL", "MNEMIC_LLM"))
    assert "agent: From memory: Lives in Lisbon." in out
    assert "agent: From memory: Alice prefers window seats on long flights." in out
    assert "bob [wednesday]: Where do I live?\n  agent: I don't know that yet." in out

"""The memory policy in CrewAI's own prompt machinery: which memory tools CrewAI offers the model
over a CrewMemory (mnemic's policy-aware ones replace CrewAI's "Search memory"/"Save to memory"),
and `inject="profile"` in the pre-task recall."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("crewai")

from crewai import Agent, Crew, Task
from crewai.memory.memory_scope import MemoryScope, MemorySlice
from crewai.tools import memory_tools as crewai_memory_tools
from crewai_helpers import ScriptedLLM, action, final

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.policy import PROFILE_HEADER
from mnemic.integrations.crewai import CrewMemory, SearchMemory
from mnemic.integrations.crewai import tools as builtin_tools
from mnemic.tools import core as tool_logic

TASK = "Help the customer with their request."
PLAN = "Recommend a database for the customer's new project."
TOOL_NAME = re.compile(r"^Tool Name: (\S+)", re.MULTILINE)
MEMORY_TOOL_NAMES = {"search_memory", "save_to_memory", "remember", "search_knowledge"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        yield mem


def scripted(steps: list[str]) -> ScriptedLLM:
    replies = list(steps)
    return ScriptedLLM(responder=lambda prompt: replies.pop(0) if replies else final("Done."))


def kickoff(crew_memory: CrewMemory, llm: ScriptedLLM, *, user: str = "alice", tools: list | None = None,
            tasks: tuple[str, ...] = (TASK,)) -> Crew:
    agent = Agent(role="Assistant", goal="Help", backstory="Helpful.", llm=llm, tools=tools or [])
    crew = Crew(agents=[agent], memory=crew_memory, name="helpdesk",
                tasks=[Task(description=t, expected_output="An answer.", agent=agent, context=[]) for t in tasks])
    crew.kickoff(inputs={"user_id": user})
    return crew


def offered(llm: ScriptedLLM) -> set[str]:
    """Every tool name the model was shown, in any request."""
    return {name for prompt in llm.prompts for name in TOOL_NAME.findall(prompt)}


def observations(llm: ScriptedLLM) -> list[str]:
    """The tool results of the run, in order (CrewAI appends each to the model's own message)."""
    last = llm.calls[-1] if llm.calls else []
    return [m["content"].rsplit("Observation:", 1)[1].strip() for m in last
            if m["role"] == "assistant" and "Observation:" in m["content"]]


# -- which tools CrewAI offers over a CrewMemory -------------------------------------------------


def test_under_off_the_model_is_offered_no_memory_tool(store: Memory) -> None:
    store.set_policy(mode="off")
    llm = scripted([final("Hello.")])
    kickoff(CrewMemory(store), llm)
    assert llm.prompts
    text = "\n".join(llm.prompts)
    assert not offered(llm) & MEMORY_TOOL_NAMES
    assert "Search memory" not in text and "Save to memory" not in text and "Tool Name:" not in text


def test_under_off_the_agents_own_search_tool_stays_and_answers_honestly(store: Memory) -> None:
    # CrewAI's "Search memory" used to replace it and answer "No relevant memories found.".
    store.set_policy(mode="off")
    llm = scripted([action("search_memory", query="favourite drink"), final("I cannot look that up.")])
    kickoff(CrewMemory(store), llm, tools=[SearchMemory()])
    assert offered(llm) == {"search_memory"}
    assert observations(llm) == [tool_logic.MEMORY_OFF]


def test_under_off_with_knowledge_on_only_knowledge_search_is_offered(store: Memory) -> None:
    store.set_policy(mode="off", knowledge=True)
    llm = scripted([final("Hello.")])
    kickoff(CrewMemory(store), llm)
    assert offered(llm) == {"search_knowledge"}


def test_under_auto_search_is_offered_but_no_save(store: Memory) -> None:
    store.set_policy(mode="explicit")
    store.remember("Prefers green tea.", user_id="alice")
    store.remember("Prefers black coffee.", user_id="bob")
    store.set_policy(mode="auto")
    llm = scripted([action("search_memory", query="prefers tea or coffee"), final("Green tea.")])
    kickoff(CrewMemory(store), llm)
    assert offered(llm) == {"search_memory"}
    (seen,) = observations(llm)
    assert seen.startswith(tool_logic.CONTEXT_NOTE)
    assert "green tea" in seen and "coffee" not in seen  # the kickoff's user, and only hers


def test_under_explicit_search_and_remember_are_offered_and_a_save_lands_under_the_kickoff_user(
        store: Memory) -> None:
    store.set_policy(mode="explicit", knowledge=True)
    llm = scripted([
        action("remember", fact="Prefers replies in bullet points."),
        action("search_memory", query="reply format"),
        final("Noted."),
    ])
    crew_memory = CrewMemory(store)
    kickoff(crew_memory, llm, user="alice")
    assert offered(llm) == {"search_memory", "remember", "search_knowledge"}
    saved, found = observations(llm)
    assert saved == "Saved to memory: Prefers replies in bullet points."
    assert "Prefers replies in bullet points." in found
    (record,) = store.list(user_id="alice")
    assert record.text == "Prefers replies in bullet points."
    assert record.source_kind == "remember_tool" and record.author == "agent"
    assert record.session_id  # the kickoff
    assert store.list(user_id="bob") == []


def test_the_agents_own_mnemic_tools_are_not_offered_twice(store: Memory) -> None:
    from mnemic.integrations.crewai import Remember, SearchKnowledge

    store.set_policy(mode="explicit")
    llm = scripted([final("Hello.")])
    kickoff(CrewMemory(store), llm, tools=[SearchMemory(), Remember(), SearchKnowledge()])
    prompt = next(p for p in llm.prompts if "Tool Name:" in p)
    names = TOOL_NAME.findall(prompt)
    assert sorted(names) == ["remember", "search_knowledge", "search_memory"]


def test_a_read_only_crewmemory_is_offered_no_save(store: Memory) -> None:
    store.set_policy(mode="explicit")
    llm = scripted([final("Hello.")])
    kickoff(CrewMemory(store, read_only=True), llm)
    assert offered(llm) == {"search_memory"}


@pytest.mark.parametrize(("mode", "expected"), [("off", set()), ("auto", {"search_memory"}),
                                              ("explicit", {"search_memory", "remember"})])
def test_agent_kickoff_on_its_own_gets_the_same_tools(store: Memory, mode: str, expected: set[str]) -> None:
    # Agent.kickoff builds its tool list through the same crewai function as a Crew does.
    store.set_policy(mode=mode)
    llm = scripted([final("Hello.")])
    agent = Agent(role="Concierge", goal="Help", backstory="Kind.", llm=llm,
                  memory=CrewMemory(store, user_id="erin"))
    agent.kickoff("Hello there.")
    assert offered(llm) == expected
    assert "Save to memory" not in "\n".join(llm.prompts)


def test_views_keep_their_scope_and_read_only(store: Memory) -> None:
    store.set_policy(mode="explicit")
    crew_memory = CrewMemory(store, user_id="alice")
    view = MemoryScope(memory=crew_memory, root_path="/agent/planner")
    tools = {t.name: t for t in crewai_memory_tools.create_memory_tools(view)}
    assert set(tools) == {"search_memory", "remember"}
    assert tools["remember"].run(fact="Likes short answers.").startswith("Saved to memory")
    (record,) = store.list(user_id="alice")
    assert record.scope == "/agent/planner"
    store.remember("Lives in Austin.", user_id="alice", scope="/agent/other")
    assert "Austin" not in tools["search_memory"].run(query="where does she live")

    sliced = MemorySlice(memory=crew_memory, scopes=["/agent/planner", "/agent/other"])
    slice_tools = {t.name: t for t in crewai_memory_tools.create_memory_tools(sliced)}
    assert set(slice_tools) == {"search_memory"}  # a slice is read-only by default
    assert "Austin" in slice_tools["search_memory"].run(query="where does she live")


def test_a_copy_crewai_rebuilt_gets_the_live_memorys_tools(store: Memory) -> None:
    store.set_policy(mode="auto")
    crew_memory = CrewMemory(store, user_id="alice")
    agent = Agent(role="Concierge", goal="Help", backstory="Kind.", llm=ScriptedLLM(), memory=crew_memory)
    rebuilt = agent.copy().memory
    assert not isinstance(rebuilt, CrewMemory)  # Agent.copy() rebuilds a plain crewai Memory
    assert [t.name for t in crewai_memory_tools.create_memory_tools(rebuilt)] == ["search_memory"]


def test_other_memories_keep_crewais_own_tools() -> None:
    plain = SimpleNamespace(read_only=False)
    names = [t.name for t in crewai_memory_tools.create_memory_tools(plain)]
    assert names == ["Search memory", "Save to memory"]
    assert builtin_tools.tools_for(plain) is None


def test_building_the_tools_never_raises_and_install_is_idempotent(tmp_path: Path) -> None:
    closed = Memory(tmp_path / "closed", embedder=HashEmbedder())
    crew_memory = CrewMemory(closed, user_id="alice")
    closed.close()
    assert crewai_memory_tools.create_memory_tools(crew_memory) == []  # withheld, not raised
    wrapper = crewai_memory_tools.create_memory_tools
    builtin_tools.install()
    assert crewai_memory_tools.create_memory_tools is wrapper
    assert not getattr(wrapper.__wrapped__, "mnemic_crewai", False)  # type: ignore[attr-defined]


# -- inject="profile" in the pre-task recall -----------------------------------------------------


def _seed_profile(store: Memory) -> list[str]:
    store.set_policy(mode="explicit")
    facts = ["Uses PostgreSQL at work for every project."]  # the oldest: outside the profile of 10
    facts += [f"Has a pet number {n} named Pet{n}." for n in range(1, 11)]
    for fact in facts:
        store.remember(fact, user_id="alice")
    store.remember("Works at Globex on PostgreSQL clusters.", user_id="bob")
    return facts


def _lines(text: str, fact: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith(f"- {fact} (remembered "))


def test_inject_profile_puts_the_profile_once_in_each_task_prompt_never_in_a_system_message(
        store: Memory) -> None:
    facts = _seed_profile(store)
    store.set_policy(mode="explicit", inject="profile")
    llm = ScriptedLLM()
    kickoff(CrewMemory(store), llm, tasks=(PLAN, TASK))

    for task in (PLAN, TASK):
        (request,) = [call for call in llm.calls
                      if any(f"Current Task: {task}" in m["content"] for m in call)]
        carrying = [m for m in request if PROFILE_HEADER in m["content"]]
        assert [m["role"] for m in carrying] == ["user"]  # never in a system message
        text = carrying[0]["content"]
        assert text.count(PROFILE_HEADER) == 1
        assert tool_logic.CONTEXT_NOTE not in text  # one block, one header
        for fact in facts[1:]:  # the newest ten: the profile
            assert _lines(text, fact) == 1
        assert "Globex" not in text  # bob's
    # The recalled fact the profile does not hold joins the block once, with no second header.
    plan_prompt = "\n".join(llm.prompts_for(PLAN))
    assert _lines(plan_prompt, facts[0]) == 1


def test_profile_facts_the_recall_also_found_are_not_repeated(store: Memory) -> None:
    _seed_profile(store)
    store.set_policy(mode="explicit", inject="profile")
    llm = ScriptedLLM()
    kickoff(CrewMemory(store), llm, tasks=("Tell me about the customer's pet number 3 named Pet3.",))
    (prompt,) = llm.prompts
    assert prompt.count(PROFILE_HEADER) == 1
    assert _lines(prompt, "Has a pet number 3 named Pet3.") == 1
    assert prompt.count("(remembered ") == len(set(re.findall(r"^- .*\(remembered .*$", prompt, re.MULTILINE)))


def test_without_inject_profile_the_task_prompt_has_only_recalled_facts(store: Memory) -> None:
    _seed_profile(store)
    llm = ScriptedLLM()
    kickoff(CrewMemory(store), llm, tasks=(PLAN,))
    (prompt,) = llm.prompts_for(PLAN)
    assert PROFILE_HEADER not in prompt
    assert tool_logic.CONTEXT_NOTE in prompt
    assert prompt.count("(remembered ") <= 5  # crewai's pre-task recall: limit=5


def test_under_off_no_profile_is_injected(store: Memory) -> None:
    _seed_profile(store)
    store.set_policy(mode="off", inject="profile")
    llm = ScriptedLLM()
    kickoff(CrewMemory(store), llm, tasks=(PLAN,))
    (prompt,) = llm.prompts_for(PLAN)
    assert PROFILE_HEADER not in prompt and "(remembered " not in prompt


def test_a_direct_recall_does_not_carry_the_profile(store: Memory) -> None:
    _seed_profile(store)
    store.set_policy(mode="explicit", inject="profile")
    crew_memory = CrewMemory(store, user_id="alice")
    matches = crew_memory.recall(PLAN, limit=5)
    assert matches and all(PROFILE_HEADER not in m.format() for m in matches)

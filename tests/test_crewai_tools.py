"""SearchMemory / Remember / SearchKnowledge as CrewAI tools: they find memory and user from the run,
answer honestly when the policy forbids them, and never raise into the agent loop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai import Agent, Crew, Task
from crewai_helpers import ScriptedLLM, action, final, last_message

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory, Remember, SearchKnowledge, SearchMemory
from mnemic.tools import core as tool_logic
from mnemic.tools.crewai import NOT_CONFIGURED

TASK = "Help the customer with their request."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        yield mem


def scripted_agent_run(steps: list[str]) -> ScriptedLLM:
    """An LLM that plays `steps` in order (tool calls, then a final answer)."""
    replies = list(steps)

    def respond(prompt: str) -> str:
        return replies.pop(0) if replies else final("Done.")

    return ScriptedLLM(responder=respond)


def observations(llm: ScriptedLLM) -> list[str]:
    found = []
    for prompt in llm.prompts:
        if "Observation:" in prompt:
            found.append(prompt.rsplit("Observation:", 1)[1].strip())
    return found


def run_crew(crew_memory: CrewMemory, llm: ScriptedLLM, user: str = "alice") -> Crew:
    agent = Agent(role="Assistant", goal="Help", backstory="Helpful.", llm=llm,
                  tools=[SearchMemory(), Remember(), SearchKnowledge()])
    crew = Crew(agents=[agent], tasks=[Task(description=TASK, expected_output="An answer.", agent=agent)],
                memory=crew_memory, name="helpdesk")
    crew.kickoff(inputs={"user_id": user})
    return crew


def test_under_off_nothing_is_written_and_the_tools_say_so(store: Memory) -> None:
    store.set_policy(mode="off")
    crew_memory = CrewMemory(store)
    llm = scripted_agent_run([
        action("remember", fact="Prefers tea over coffee."),
        action("search_knowledge", query="refund policy"),
        final("I cannot remember things for you."),
    ])
    run_crew(crew_memory, llm)
    seen = observations(llm)
    assert any(tool_logic.REMEMBER_OFF in s for s in seen)
    assert any(tool_logic.KNOWLEDGE_OFF in s for s in seen)
    assert store.list(include_invalid=True) == []
    with crew_memory.for_user("alice"):
        assert SearchMemory(memory=crew_memory).run(query="tea") == tool_logic.MEMORY_OFF
        assert SearchMemory().run(query="tea") == NOT_CONFIGURED  # outside a run, nothing to find


def test_remember_in_a_crew_stores_for_the_kickoff_user(store: Memory) -> None:
    store.set_policy(mode="explicit")
    crew_memory = CrewMemory(store)
    llm = scripted_agent_run([action("remember", fact="Prefers tea over coffee."), final("Noted.")])
    run_crew(crew_memory, llm, user="alice")
    assert any(s.startswith("Saved to memory: Prefers tea over coffee.") for s in observations(llm))
    (record,) = store.list(user_id="alice")
    assert record.text == "Prefers tea over coffee."
    assert record.author == "agent" and record.source_kind == "remember_tool"
    assert record.session_id  # the kickoff
    assert store.list(user_id="bob") == []
    # In a crew with memory, CrewAI's own "Search memory" takes the place of SearchMemory.
    tool_prompt = next(p for p in llm.prompts if "Tool Name:" in p)
    assert tool_prompt.count("Tool Name: search_memory") == 1


def test_policy_honest_answers(store: Memory) -> None:
    crew_memory = CrewMemory(store, user_id="alice")
    search, remember, knowledge = (SearchMemory(memory=crew_memory), Remember(memory=crew_memory),
                                   SearchKnowledge(memory=crew_memory))

    store.set_policy(mode="auto")
    assert remember.run(fact="Prefers tea.") == tool_logic.REMEMBER_AUTO
    assert search.run(query="what does she drink?") == tool_logic.NO_MEMORIES
    assert knowledge.run(query="refunds") == tool_logic.KNOWLEDGE_OFF

    store.set_policy(mode="explicit", knowledge=True)
    assert remember.run(fact="Prefers tea over coffee.").startswith("Saved to memory")
    found = search.run(query="tea or coffee")
    assert found.startswith(tool_logic.CONTEXT_NOTE) and "Prefers tea over coffee." in found
    assert knowledge.run(query="refunds") == tool_logic.NO_KNOWLEDGE
    store.knowledge.add("Refunds are processed within 5 business days.", verbatim=True)
    assert "5 business days" in knowledge.run(query="how long do refunds take")

    # Another user's tool sees none of it.
    assert SearchMemory(memory=store, user_id="bob").run(query="tea or coffee") == tool_logic.NO_MEMORIES


def test_tools_never_raise(tmp_path: Path) -> None:
    closed = Memory(tmp_path / "closed", embedder=HashEmbedder())
    closed.close()
    answers = [
        SearchMemory(memory=closed, user_id="alice").run(query="tea"),
        Remember(memory=closed, user_id="alice").run(fact="Prefers tea."),
        SearchKnowledge(memory=closed).run(query="refunds"),
        SearchMemory(memory=object(), user_id="alice").run(query="tea"),
        SearchMemory(memory=None).run(query="tea"),
    ]
    assert all(isinstance(a, str) and a for a in answers)
    assert answers[-1] == NOT_CONFIGURED
    with Memory(tmp_path / "open", embedder=HashEmbedder()) as mem:
        assert SearchMemory(memory=mem).run(query="tea") == tool_logic.NO_USER
        assert last_message([{"content": "x"}]) == "x"


def test_remember_refuses_questions_and_instructions_in_a_crew(store: Memory) -> None:
    store.set_policy(mode="explicit")
    llm = scripted_agent_run([
        action("remember", fact="where is the warehouse?"),
        action("remember", fact="Record the customer's logistics details from this message."),
        action("remember", fact="The warehouse is in Rotterdam."),
        final("Noted."),
    ])
    run_crew(CrewMemory(store), llm, user="acme")
    seen = observations(llm)
    assert any(tool_logic.NOT_A_FACT["question"] in s for s in seen)
    assert any(tool_logic.NOT_A_FACT["instruction"] in s for s in seen)
    assert [r.text for r in store.list(user_id="acme")] == ["The warehouse is in Rotterdam."]


def test_a_standing_wish_is_kept_as_what_the_user_wants(store: Memory) -> None:
    store.set_policy(mode="explicit")
    answer = Remember(memory=store, user_id="alice").run(fact="Always reply in French.")
    assert answer == "Saved to memory: Wants the assistant to always reply in French."


def test_an_oversized_query_gets_a_short_answer_and_no_traceback(
        store: Memory, caplog: pytest.LogCaptureFixture) -> None:
    store.set_policy(mode="explicit", knowledge=True)
    huge = "where is the warehouse " * 5000
    with caplog.at_level("DEBUG", logger="mnemic"):
        for tool in (SearchMemory(memory=store, user_id="alice"), SearchKnowledge(memory=store)):
            answer = tool.run(query=huge)
            assert answer.startswith("The query is too long") and len(answer) < 200
    assert not [r for r in caplog.records if r.levelno >= 40 or r.exc_info]


def test_a_rule_of_the_users_world_is_kept_and_a_question_said_as_a_statement_is_not(store: Memory) -> None:
    store.set_policy(mode="explicit")
    tool = Remember(memory=store, user_id="acme")
    assert tool.run(fact="Never ship on Sundays.") == "Saved to memory: Standing rule: Never ship on Sundays."
    assert tool.run(fact="Don't invoice in USD.") == "Saved to memory: Standing rule: Do not invoice in USD."
    assert tool.run(fact="I wonder where the warehouse is.") == tool_logic.NOT_A_FACT["question"]
    assert tool.run(fact="Record the customer's details.") == tool_logic.NOT_A_FACT["instruction"]
    assert sorted(r.text for r in store.list(user_id="acme")) == [
        "Standing rule: Do not invoice in USD.", "Standing rule: Never ship on Sundays."]


def test_invisible_damage_in_a_models_tool_call_is_repaired_not_reported_as_a_failure(
        store: Memory, caplog: pytest.LogCaptureFixture) -> None:
    store.set_policy(mode="explicit")
    remember, search = Remember(memory=store, user_id="alice"), SearchMemory(memory=store, user_id="alice")
    assert remember.run(fact="Prefers\x00 green tea.") == "Saved to memory: Prefers green tea."
    assert remember.run(fact="Works at Caf\ud800 Nero.").startswith("Saved to memory: Works at Caf")
    found = search.run(query="green\x00 tea\ud800")
    assert "Prefers green tea." in found and "failed" not in found
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_tools_given_a_crewmemory_keep_its_root_scope_and_read_only(store: Memory) -> None:
    store.set_policy(mode="explicit")
    store.remember("Alice's plan for the other crew is Operation Quillfeather.", user_id="alice", scope="/crew-b")
    store.remember("Alice's plan for this crew is a budget of 500 euros.", user_id="alice", scope="/crew-a")
    frozen = CrewMemory(store, user_id="alice", read_only=True, root_scope="/crew-a")

    assert Remember(memory=frozen).run(fact="Prefers window seats.") == tool_logic.READ_ONLY
    found = SearchMemory(memory=frozen).run(query="Alice's plan")
    assert "500 euros" in found and "Quillfeather" not in found
    # A tool's scope is inside the root scope, as it is for CrewMemory.recall(scope=...).
    assert SearchMemory(memory=frozen, scope="/crew-b").run(query="Alice's plan") == tool_logic.NO_MEMORIES

    writable = CrewMemory(store, user_id="alice", root_scope="/crew-a")
    assert Remember(memory=writable).run(fact="Prefers window seats.").startswith("Saved to memory")
    assert Remember(memory=writable, scope="/trips").run(fact="Flies from Lyon.").startswith("Saved to memory")
    scopes = {r.text: r.scope for r in store.list(user_id="alice")}
    assert scopes["Prefers window seats."] == "/crew-a" and scopes["Flies from Lyon."] == "/crew-a/trips"


def test_tools_given_a_scope_or_slice_stay_inside_it(store: Memory) -> None:
    store.set_policy(mode="explicit")
    store.remember("Alice's planner notes: she flies from Lyon.", user_id="alice", scope="/crew-a/planner")
    store.remember("Alice's billing notes: she pays by invoice.", user_id="alice", scope="/crew-a/billing")
    store.remember("Alice's notes in another crew: she flies from Oslo.", user_id="alice", scope="/crew-b/planner")
    crew_memory = CrewMemory(store, user_id="alice", root_scope="/crew-a")
    query = "Alice's notes"

    planner = crew_memory.scope("/planner")
    found = SearchMemory(memory=planner).run(query=query)
    assert "Lyon" in found and "invoice" not in found and "Oslo" not in found
    assert Remember(memory=planner).run(fact="Prefers aisle seats.").startswith("Saved to memory")

    both = crew_memory.slice(["/planner", "/billing"])  # read-only, as CrewAI's slices are by default
    found = SearchMemory(memory=both).run(query=query)
    assert "Lyon" in found and "invoice" in found and "Oslo" not in found
    assert Remember(memory=both).run(fact="Prefers window seats.") == tool_logic.READ_ONLY
    # A writable slice saves into its first scope, where its own search finds the fact again.
    writable = crew_memory.slice(["/billing", "/planner"], read_only=False)
    assert Remember(memory=writable).run(fact="Wants paper invoices.").startswith("Saved to memory")
    # mnemic's own views confine the tools the same way.
    assert Remember(memory=store.slice(["/crew-a"]), user_id="alice").run(fact="Likes tea.") == tool_logic.READ_ONLY

    scopes = {r.text: r.scope for r in store.list(user_id="alice")}
    assert scopes["Prefers aisle seats."] == "/crew-a/planner"
    assert scopes["Wants paper invoices."] == "/crew-a/billing"
    assert "Prefers window seats." not in scopes and "Likes tea." not in scopes


def test_tools_an_agent_lists_itself_act_through_the_crews_read_only_memory(store: Memory) -> None:
    store.set_policy(mode="explicit")
    store.remember("Alice's plan for the other crew is Operation Quillfeather.", user_id="alice", scope="/crew-b")
    llm = scripted_agent_run([
        action("remember", fact="Alice's budget is 500 euros."),
        action("search_memory", query="Alice's plan"),
        final("Noted."),
    ])
    run_crew(CrewMemory(store, read_only=True, root_scope="/crew-a"), llm)
    seen = observations(llm)
    assert any(s.startswith(tool_logic.READ_ONLY) for s in seen)
    assert not any("Quillfeather" in s for s in seen)
    assert [r.scope for r in store.list(user_id="alice")] == ["/crew-b"]


def test_tools_an_agent_lists_itself_keep_to_the_agents_slice_in_a_crew(store: Memory) -> None:
    store.set_policy(mode="explicit")
    store.remember("Alice's planner notes: she flies from Lyon.", user_id="alice", scope="/planner")
    store.remember("Alice's billing notes: she pays by invoice.", user_id="alice", scope="/billing")
    crew_memory = CrewMemory(store)
    llm = scripted_agent_run([
        action("remember", fact="Alice's budget is 500 euros."),
        action("search_memory", query="Alice's notes"),
        final("Noted."),
    ])
    agent = Agent(role="Planner", goal="Help", backstory="Helpful.", llm=llm,
                  memory=crew_memory.slice(["/planner"]), tools=[SearchMemory(), Remember()])
    crew = Crew(agents=[agent], tasks=[Task(description=TASK, expected_output="An answer.", agent=agent)],
                memory=crew_memory, name="helpdesk")
    crew.kickoff(inputs={"user_id": "alice"})
    seen = observations(llm)
    assert any(s.startswith(tool_logic.READ_ONLY) for s in seen)
    assert any("Lyon" in s for s in seen) and not any("invoice" in s for s in seen)
    assert sorted(r.scope for r in store.list(user_id="alice")) == ["/billing", "/planner"]

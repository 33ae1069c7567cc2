"""crew.replay(task_id) with a CrewMemory: any crew's kickoffs are kept (not only the latest of
every crew), and a replay recalls and stores for the user its kickoff ran for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai import Agent, Crew, Task
from crewai_helpers import ScriptedLLM

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory, MnemicCrewOutput, replay

SUMMARY = "Summarise the customer's request"
PLAN = "Write the deployment plan for the database change."
TRIAGE = "Triage the ticket"
SUMMARY_ANSWER = "The customer wants a PostgreSQL migration of the orders table."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.set_policy(mode="auto")
        mem.remember("Database changes are deployed on Fridays.", user_id="alice")
        mem.remember("Database changes are deployed on Mondays.", user_id="bob")
        yield mem


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM({SUMMARY: SUMMARY_ANSWER, PLAN: "You prefer a blue-green rollout for the orders table.",
                        TRIAGE: "Low priority: a printer."})


def planning_crew(memory: CrewMemory, llm: ScriptedLLM) -> Crew:
    agent = Agent(role="Planner", goal="Plan changes", backstory="Careful.", llm=llm)
    return Crew(agents=[agent], name="planning", memory=memory, tasks=[
        Task(description=SUMMARY + ": {message}", expected_output="A summary.", agent=agent),
        Task(description=PLAN, expected_output="A plan.", agent=agent),
    ])


def triage_crew(memory: CrewMemory, llm: ScriptedLLM) -> Crew:
    agent = Agent(role="Triager", goal="Triage", backstory="Quick.", llm=llm)
    return Crew(agents=[agent], name="triage", memory=memory, tasks=[
        Task(description=TRIAGE + ": {message}", expected_output="A priority.", agent=agent)])


def _plan_prompts(llm: ScriptedLLM, since: int) -> list[str]:
    return [p for p in llm.prompts[since:] if f"Current Task: {PLAN}" in p]


def test_replay_of_a_crew_after_another_crew_ran_sees_its_outputs_and_its_user(store: Memory,
                                                                                llm: ScriptedLLM) -> None:
    crew_memory = CrewMemory(store)
    planning, triage = planning_crew(crew_memory, llm), triage_crew(crew_memory, llm)
    first = planning.kickoff(inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    triage.kickoff(inputs={"user_id": "bob", "message": "The printer is broken."})
    before = len(llm.prompts)

    result = planning.replay(str(planning.tasks[1].id))  # crewai alone: "Task with id ... not found"

    assert isinstance(result, MnemicCrewOutput) and "blue-green rollout" in result.raw
    assert len(llm.prompts) - before == 1, "only the replayed task runs again"
    prompt = _plan_prompts(llm, before)[0]
    assert SUMMARY_ANSWER in prompt  # task 1's stored output is the replayed task's context
    assert "Fridays" in prompt and "Mondays" not in prompt  # alice's memory, not bob's
    # What the replayed task established is stored for alice only.
    assert any("blue-green rollout" in r.text for r in store.list(user_id="alice"))
    assert not any("blue-green rollout" in r.text for r in store.list(user_id="bob"))
    # The replay is a kickoff of its own; the one it replays is unchanged.
    replayed = store.runs.get(result.kickoff_id)  # type: ignore[arg-type]
    assert replayed is not None and replayed.meta["replay_of"] == first.kickoff_id
    assert replayed.user_id == "alice" and replayed.step_count == 2
    original = store.runs.get(first.kickoff_id)  # type: ignore[arg-type]
    assert original is not None and original.steps[0].output["output"]["raw"] == SUMMARY_ANSWER


def test_replay_of_an_older_kickoff_runs_as_that_kickoffs_user(store: Memory, llm: ScriptedLLM) -> None:
    crew_memory = CrewMemory(store)
    planning = planning_crew(crew_memory, llm)
    alices = planning.kickoff(inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    planning.kickoff(inputs={"user_id": "bob", "message": "Archive old invoices."})
    before = len(llm.prompts)

    result = replay(planning, str(planning.tasks[1].id), kickoff_id=alices.kickoff_id)
    prompt = _plan_prompts(llm, before)[0]
    assert "Fridays" in prompt and "Mondays" not in prompt
    replayed = store.runs.get(result.kickoff_id)  # type: ignore[attr-defined]
    assert replayed is not None and replayed.inputs["message"] == "Move orders to Postgres."

    # crew.replay with the user named picks that user's latest kickoff, not bob's newer one.
    before = len(llm.prompts)
    planning.replay(str(planning.tasks[1].id), inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    assert "Fridays" in _plan_prompts(llm, before)[0]


def test_a_kickoff_is_never_replayed_for_another_user(store: Memory, llm: ScriptedLLM) -> None:
    planning = planning_crew(CrewMemory(store), llm)
    alices = planning.kickoff(inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    before = len(llm.prompts)
    with pytest.raises(PermissionError, match="user"):
        replay(planning, str(planning.tasks[1].id), kickoff_id=alices.kickoff_id, inputs={"user_id": "bob"})
    with pytest.raises(PermissionError, match="user"):
        planning.replay(str(planning.tasks[1].id), inputs={"user_id": "bob", "message": "x"})
    bound_to_bob = planning_crew(CrewMemory(store, user_id="bob"), llm)
    with pytest.raises(PermissionError):
        bound_to_bob.replay(str(planning.tasks[1].id))
    assert len(llm.prompts) == before, "nothing ran"


def test_a_replay_inside_for_user_never_takes_another_users_kickoff_by_its_inputs(
        store: Memory, llm: ScriptedLLM) -> None:
    # Inside for_user("bob") memory acts for bob whatever the inputs say: inputs naming alice picked
    # alice's kickoff and replayed her task output into bob's prompt, memory and run log.
    crew_memory = CrewMemory(store)
    planning = planning_crew(crew_memory, llm)
    planning.kickoff(inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    before, kept = len(llm.prompts), len(store.runs.runs())
    with crew_memory.for_user("bob"), pytest.raises(PermissionError, match="name one user"):
        planning.replay(str(planning.tasks[1].id), inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    assert len(llm.prompts) == before and len(store.runs.runs()) == kept
    assert not any("blue-green" in r.text for r in store.list(user_id="bob"))
    with crew_memory.for_user("alice"):  # the same user twice is no conflict
        planning.replay(str(planning.tasks[1].id), inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    assert "Fridays" in _plan_prompts(llm, before)[0]


def test_a_crew_built_again_replays_a_kept_kickoff(store: Memory, llm: ScriptedLLM) -> None:
    """As after a restart: new crew and task objects (new task ids), the same crew definition."""
    crew_memory = CrewMemory(store)
    original = planning_crew(crew_memory, llm)
    original.kickoff(inputs={"user_id": "alice", "message": "Move orders to Postgres."})
    stored_task_id = str(original.tasks[1].id)

    rebuilt = planning_crew(crew_memory, llm)
    assert str(rebuilt.tasks[1].id) != stored_task_id
    for task_id in (stored_task_id, str(rebuilt.tasks[1].id)):
        before = len(llm.prompts)
        rebuilt.replay(task_id)
        prompt = _plan_prompts(llm, before)[0]
        assert SUMMARY_ANSWER in prompt and "Fridays" in prompt


def test_replay_names_what_is_missing(store: Memory, llm: ScriptedLLM) -> None:
    planning = planning_crew(CrewMemory(store), llm)
    with pytest.raises(ValueError, match="not found in any kickoff"):
        planning.replay("no-such-task")
    with pytest.raises(ValueError, match="no stored kickoff"):
        replay(planning, str(planning.tasks[1].id), kickoff_id="0123456789abcdef")
    triage = triage_crew(CrewMemory(store), llm)
    ran = triage.kickoff(inputs={"user_id": "alice", "message": "Printer."})
    with pytest.raises(ValueError, match="not by this crew"):
        replay(planning, str(planning.tasks[1].id), kickoff_id=ran.kickoff_id)


def test_kickoffs_are_kept_per_crew_up_to_the_configured_number(store: Memory, llm: ScriptedLLM) -> None:
    crew_memory = CrewMemory(store, keep_kickoffs=2)
    planning, triage = planning_crew(crew_memory, llm), triage_crew(crew_memory, llm)
    triage.kickoff(inputs={"user_id": "bob", "message": "Printer."})
    ids = [planning.kickoff(inputs={"user_id": "alice", "message": f"Change {n}."}).kickoff_id for n in range(3)]
    kept = store.runs.runs(group=str(planning.key))
    assert [r.run_id for r in kept] == [ids[2], ids[1]]
    assert len(store.runs.runs(group=str(triage.key))) == 1  # another crew's kickoffs are not pruned
    assert store.forget(user_id="alice").retained["kickoffs"] == 2


def test_a_crewmemory_that_keeps_no_kickoffs_leaves_crewais_store_alone(store: Memory, llm: ScriptedLLM) -> None:
    planning = planning_crew(CrewMemory(store, keep_kickoffs=0), llm)
    result = planning.kickoff(inputs={"user_id": "alice", "message": "Move orders."})
    assert result.kickoff_id is None and not store.runs.in_use()
    with pytest.raises(ValueError, match="keeps no kickoffs"):
        replay(planning, str(planning.tasks[1].id))

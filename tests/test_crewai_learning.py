"""Crews that learn from their own work (issue 12), in real CrewAI kickoffs, offline.

A crew under policy `auto` stores what its tasks established, with the crew's LLM or with no
usable LLM at all, never the task's instructions; and every entry point (kickoff_for_each,
concurrent kickoff_async, flows) files facts under its own run's user or is refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai import Agent, Crew, Process, Task
from crewai.flow.flow import Flow, start
from crewai.flow.human_feedback import human_feedback
from crewai.hooks.dispatch import HookAborted
from crewai_helpers import ScriptedFeedback, ScriptedLLM, action, final
from pydantic import BaseModel

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.fences import unfenced
from mnemic.integrations.crewai import CrewMemory
from mnemic.integrations.crewai.kickoff_guard import BUSY
from mnemic.tools.core import CONTEXT_NOTE

RECORD = "Record the customer's logistics details from this message: {message}"
PLAN = "Plan the next delivery for the customer."
ANSWER = "The customer's warehouse is in Rotterdam and they ship on Tuesdays."
CHECK = "Check the delivery calendar."
CHECKED = "The delivery calendar has free slots next week."


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.set_policy(mode="auto")
        yield mem


def crew_for(memory: CrewMemory, llm: ScriptedLLM, *descriptions: str) -> Crew:
    agent = Agent(role="Logistics Clerk", goal="Keep delivery records", backstory="Careful.", llm=llm)
    tasks = [Task(description=d, expected_output="The details.", agent=agent, context=[]) for d in descriptions]
    return Crew(agents=[agent], tasks=tasks, memory=memory, name="logistics")


def echo_result_as_fact(prompt: str) -> str:
    """A crew LLM doing mnemic's extraction: each sentence of the agent's result, as the agent's fact."""
    result = " ".join(text for speaker, text in unfenced(prompt) if speaker == "agent's result")
    sentences = [s for s in re.split(r"(?<=\.)\s+", result) if s.strip()]
    return json.dumps({"facts": [{"text": s, "topic": "key_details", "author": "agent", "from_tool": False,
                                  "decision": "insert", "targets": [], "reason": "stated in the result"}
                                 for s in sentences]})


def plan_prompt(llm: ScriptedLLM) -> str:
    (prompt,) = llm.prompts_for(PLAN)
    return prompt.split(CONTEXT_NOTE, 1)[1] if CONTEXT_NOTE in prompt else ""


def test_with_the_crews_llm_a_second_kickoff_knows_what_the_first_learned(store: Memory) -> None:
    first = ScriptedLLM({"Record the customer's": ANSWER, "Confirm": "Confirmed."}, extraction=echo_result_as_fact)
    crew_for(CrewMemory(store), first, RECORD, "Confirm the record.").kickoff(
        inputs={"user_id": "acme", "message": "Our warehouse is in Rotterdam; we ship Tuesdays."})
    assert len(first.extraction_calls) == 2  # one per task, as CrewAI's own memory makes
    learned = {r.text: r for r in store.list(user_id="acme")}
    record = learned[ANSWER]
    assert record.author == "agent"
    assert record.metadata["agent_role"] == "Logistics Clerk" and record.metadata["crew"] == "logistics"
    assert record.metadata["task"].startswith("Record the customer's") and record.metadata["kickoff_id"]
    assert not any("Record the customer" in text for text in learned)  # never the instruction

    # Kickoff 2 is a fresh Crew whose second task needs kickoff 1's result, not kickoff 2's first.
    second = ScriptedLLM({CHECK: CHECKED}, extraction=echo_result_as_fact)
    crew_for(CrewMemory(store), second, CHECK, PLAN).kickoff(inputs={"user_id": "acme"})
    assert "Rotterdam" in plan_prompt(second) and "Tuesdays" in plan_prompt(second)
    assert len(second.extraction_calls) == 2
    assert store.stats.llm_failures == 0 and store.stats.llm_calls["extract"] == 4


def test_with_no_usable_llm_a_second_kickoff_still_knows_what_the_first_learned(store: Memory) -> None:
    # The crew's LLM answers mnemic's extraction request with prose, as a chat model may.
    first = ScriptedLLM({"Record the customer's": ANSWER}, extraction="Sure! The warehouse is in Rotterdam.")
    crew_for(CrewMemory(store), first, RECORD).kickoff(
        inputs={"user_id": "acme", "message": "Please file this for the account."})
    texts = [r.text for r in store.list(user_id="acme")]
    assert ANSWER in texts
    assert not any("Record" in t or "Please" in t for t in texts)
    assert (store.stats.llm_calls["extract"], store.stats.llm_failures, store.stats.llm_fallbacks) == (1, 1, 1)

    second = ScriptedLLM({CHECK: CHECKED, PLAN: "Deliver to Rotterdam on Tuesday."},
                         extraction="Sure! Here is what I found.")
    crew_for(CrewMemory(store), second, CHECK, PLAN).kickoff(inputs={"user_id": "acme"})
    assert "Rotterdam" in plan_prompt(second) and "Tuesdays" in plan_prompt(second)
    assert len(second.extraction_calls) == 2  # asked once per task, never retried
    assert (store.stats.llm_calls["extract"], store.stats.llm_failures, store.stats.llm_fallbacks) == (3, 3, 3)


WRONG = "The customer's warehouse is in Qzland."
RIGHT = "The customer's warehouse is in Rotterdam."


def guarded_crew(memory: CrewMemory, replies: list[str], verdicts: list[bool], *, as_list: bool) -> Crew:
    """A crew of one task whose guardrail gives `verdicts` in turn to the agent's `replies`."""
    answers, verdict = iter(replies), iter(verdicts)
    llm = ScriptedLLM(responder=lambda prompt: final(next(answers)), extraction="Sure!")  # rules extract

    def guard(output):  # type: ignore[no-untyped-def]  # CrewAI refuses a string return annotation
        return (True, output.raw) if next(verdict) else (False, "That city is wrong.")

    agent = Agent(role="Logistics Clerk", goal="Keep delivery records", backstory="Careful.", llm=llm)
    checks: dict[str, object] = {"guardrails": [guard]} if as_list else {"guardrail": guard}
    task = Task(description="Find the customer's warehouse city.", expected_output="The city.", agent=agent,
                guardrail_max_retries=1, **checks)  # type: ignore[arg-type]
    return Crew(agents=[agent], tasks=[task], memory=memory, name="logistics")


@pytest.mark.parametrize("as_list", [False, True], ids=["guardrail", "guardrails"])
def test_only_the_answer_the_guardrail_accepted_is_learned(store: Memory, as_list: bool) -> None:
    crew = guarded_crew(CrewMemory(store), [WRONG, RIGHT], [False, True], as_list=as_list)
    assert crew.kickoff(inputs={"user_id": "acme"}).raw == RIGHT
    assert [r.text for r in store.list(user_id="acme")] == [RIGHT]


def test_an_answer_the_guardrail_rewrote_is_learned_as_rewritten(store: Memory) -> None:
    """A guardrail may accept an answer it changed (a phone number taken out): the task's output
    is the rewritten answer, and so is what the task teaches."""
    said = "The customer's contact phone is 555 0199 and the warehouse is in Rotterdam."
    llm = ScriptedLLM(responder=lambda prompt: final(said), extraction="Sure!")  # rules extract

    def without_phone(output):  # type: ignore[no-untyped-def]
        return True, RIGHT

    agent = Agent(role="Logistics Clerk", goal="Keep delivery records", backstory="Careful.", llm=llm)
    task = Task(description="Find the customer's warehouse city.", expected_output="The city.", agent=agent,
                guardrail=without_phone)
    crew = Crew(agents=[agent], tasks=[task], memory=CrewMemory(store), name="logistics")
    assert crew.kickoff(inputs={"user_id": "acme"}).raw == RIGHT
    store.drain_writes()
    assert [r.text for r in store.list(user_id="acme")] == [RIGHT]


def test_work_delegated_within_a_task_is_learned_as_the_coworkers_own(store: Memory) -> None:
    """A coworker's answer is held with the task it was delegated from, and written when that task
    passes: as the coworker said it, not replaced by the task's accepted answer."""
    said: list[str] = []

    def manager(prompt: str) -> str:
        said.append(prompt)
        if len(said) > 1:
            return final("The warehouse is in Bergen and ships on Mondays.")
        return action("Delegate work to coworker", task="Find the warehouse city", context="customer acme",
                      coworker="Logistics Clerk")

    worker = Agent(role="Logistics Clerk", goal="Keep records", backstory="Careful.",
                   llm=ScriptedLLM(responder=lambda prompt: final("The warehouse is in Bergen."), extraction="Sure!"))
    task = Task(description="Find the customer's warehouse city.", expected_output="The city.")
    crew = Crew(agents=[worker], tasks=[task], process=Process.hierarchical, memory=CrewMemory(store),
                manager_llm=ScriptedLLM(responder=manager, extraction="Sure!"), name="logistics")
    crew.kickoff(inputs={"user_id": "acme"})
    store.drain_writes()
    learned = {r.text: r.metadata.get("agent_role") for r in store.list(user_id="acme")}
    assert learned == {"The warehouse is in Bergen.": "Logistics Clerk",
                       "The warehouse is in Bergen and ships on Mondays.": "Crew Manager"}


def test_natively_async_kickoffs_learn_only_the_accepted_answer_too(store: Memory) -> None:
    crew = guarded_crew(CrewMemory(store), [WRONG, RIGHT], [False, True], as_list=False)
    assert asyncio.run(crew.akickoff(inputs={"user_id": "acme"})).raw == RIGHT
    store.drain_writes()
    assert [r.text for r in store.list(user_id="acme")] == [RIGHT]


@pytest.mark.parametrize("as_list", [False, True], ids=["guardrail", "guardrails"])
def test_a_task_that_fails_its_guardrail_teaches_nothing(store: Memory, as_list: bool) -> None:
    crew = guarded_crew(CrewMemory(store), [WRONG, WRONG], [False, False], as_list=as_list)
    with pytest.raises(Exception, match="guardrail"):
        crew.kickoff(inputs={"user_id": "acme"})
    store.drain_writes()
    assert store.list(user_id="acme") == []


def test_an_unknown_answer_is_not_learned(store: Memory) -> None:
    llm = ScriptedLLM({"Where is": "UNKNOWN"})
    crew_for(CrewMemory(store), llm, "Where is the customer's warehouse?").kickoff(inputs={"user_id": "acme"})
    assert store.list(user_id="acme") == []


def test_a_few_words_answering_the_tasks_question_are_learned_as_the_statement_they_make(store: Memory) -> None:
    llm = ScriptedLLM({"Who is the account manager": "Jane Smith", "Where is": "Rotterdam"},
                      extraction="Sure! Here is what I found.")
    crew_for(CrewMemory(store), llm, "Who is the account manager for Acme?", "Where is the customer's warehouse?"
             ).kickoff(inputs={"user_id": "acme"})
    assert sorted(r.text for r in store.list(user_id="acme")) == [
        "The account manager for Acme is Jane Smith.", "The customer's warehouse is in Rotterdam."]

    # A question in a template names its subject only through the inputs: nothing bare is kept.
    llm = ScriptedLLM({"Who is the account manager": "Tom Baker"}, extraction="Sure!")
    crew_for(CrewMemory(store), llm, "Who is the account manager for {company}?").kickoff(
        inputs={"user_id": "bob", "company": "Initech"})
    assert [r.text for r in store.list(user_id="bob")] == []


# -- every run files its facts under its own user ----------------------------------------------

CITIES = {"alice": "Austin", "bob": "Oslo", "carol": "Lima", "dave": "Rome"}


def says_where(prompt: str) -> str:
    found = re.search(r"lives in (\w+)", prompt.split("Current Task:", 1)[-1])
    return final(f"The customer lives in {found.group(1)}." if found else "Noted.")


def wrong_user_facts(store: Memory) -> list[tuple[str, str]]:
    wrong = []
    for user, city in CITIES.items():
        for record in store.list(user_id=user):
            if any(other in record.text for other in CITIES.values() if other != city):
                wrong.append((user, record.text))
    return wrong


def test_kickoff_for_each_files_each_runs_facts_under_its_user(store: Memory) -> None:
    crew = crew_for(CrewMemory(store), ScriptedLLM(responder=says_where), "File the customer's note: {note}")
    users = ["alice", "bob", "carol"]
    crew.kickoff_for_each([{"user_id": u, "note": f"The customer lives in {CITIES[u]}."} for u in users])
    assert wrong_user_facts(store) == []
    for user in users:
        assert any(CITIES[user] in r.text for r in store.list(user_id=user)), user


def test_copies_of_a_crew_that_already_ran_are_refused_not_filed_under_the_wrong_user(store: Memory) -> None:
    # CrewAI's Crew.copy() keeps the previous run's filled-in task text: every copy would work on
    # alice's note, whoever it is for. Before, bob and carol were each given "Lives in Austin".
    crew = crew_for(CrewMemory(store), ScriptedLLM(responder=says_where), "File the customer's note: {note}")
    crew.kickoff(inputs={"user_id": "alice", "note": "The customer lives in Austin."})
    with pytest.raises(HookAborted, match="still holds the text an earlier kickoff filled in"):
        crew.kickoff_for_each([{"user_id": u, "note": f"The customer lives in {CITIES[u]}."} for u in ("bob", "carol")])
    assert wrong_user_facts(store) == []
    assert store.list(user_id="bob") == [] and store.list(user_id="carol") == []
    # The crew object itself is fine: CrewAI fills its tasks in from their templates again.
    crew.kickoff(inputs={"user_id": "bob", "note": "The customer lives in Oslo."})
    assert any("Oslo" in r.text for r in store.list(user_id="bob")) and wrong_user_facts(store) == []


def test_concurrent_kickoff_async_on_one_crew_never_mixes_users(store: Memory) -> None:
    gate = threading.Barrier(2, timeout=2)

    def slow_where(prompt: str) -> str:
        with contextlib.suppress(threading.BrokenBarrierError):
            gate.wait()  # hold the first run inside its task until a second one has started
        return says_where(prompt)

    crew = crew_for(CrewMemory(store), ScriptedLLM(responder=slow_where), "File the customer's note: {note}",
                    "Summarise the customer's file.")

    async def run_all() -> list[object]:
        return await asyncio.gather(*[
            crew.kickoff_async(inputs={"user_id": u, "note": f"The customer lives in {c}."}) for u, c in CITIES.items()
        ], return_exceptions=True)

    outcomes = dict(zip(CITIES, asyncio.run(run_all()), strict=True))
    gate.abort()
    assert wrong_user_facts(store) == []
    finished = [u for u, o in outcomes.items() if not isinstance(o, BaseException)]
    refused = [u for u, o in outcomes.items() if isinstance(o, HookAborted)]
    assert finished and refused and len(finished) + len(refused) == 4
    assert all(str(outcomes[u]).startswith(BUSY.format(kind="crew")[:40]) for u in refused)
    for user in finished:
        assert any(CITIES[user] in r.text for r in store.list(user_id=user))
    for user in refused:
        assert store.list(user_id=user) == []


def test_concurrent_kickoff_async_on_copies_as_the_refusal_advises_all_run_apart(store: Memory) -> None:
    crew = crew_for(CrewMemory(store), ScriptedLLM(responder=says_where), "File the customer's note: {note}")

    async def run_all() -> list[object]:
        return await asyncio.gather(*[
            crew.copy().kickoff_async(inputs={"user_id": u, "note": f"The customer lives in {c}."})
            for u, c in CITIES.items()
        ], return_exceptions=True)

    outcomes = asyncio.run(run_all())
    assert not [o for o in outcomes if isinstance(o, BaseException)]
    assert wrong_user_facts(store) == []
    for user, city in CITIES.items():
        assert any(city in r.text for r in store.list(user_id=user)), user


# -- flows --------------------------------------------------------------------------------------

LESSON = "Always cite a source for every claim in a draft."


def reviewer(prompt: str) -> str:
    if "Extract generalizable lessons" in prompt:
        return f"- {LESSON}"
    return "Thought: done\nFinal Answer: ok"


class ReviewState(BaseModel):
    user_id: str | None = None
    draft: str = ""


def review_flow(crew_memory: CrewMemory, feedback: ScriptedFeedback) -> Flow:  # type: ignore[type-arg]
    llm = ScriptedLLM(responder=reviewer)

    class DraftReview(Flow[ReviewState]):
        memory = crew_memory

        @start()
        @human_feedback(message="Review the draft:", llm=llm, learn=True, provider=feedback)
        def draft(self) -> str:
            return "Drafts about databases: PostgreSQL is the most popular choice."

    return DraftReview()


def test_a_flow_with_no_user_is_refused_at_the_start(store: Memory, caplog: pytest.LogCaptureFixture) -> None:
    feedback = ScriptedFeedback(["Cite your sources."])
    with pytest.raises(HookAborted, match="does not know which user this run is for") as refused:
        review_flow(CrewMemory(store), feedback).kickoff()
    assert "flow.kickoff(inputs={'user_id': 'alice'})" in str(refused.value)
    assert feedback.seen == []  # refused before any work, so no lesson can be dropped
    assert not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize("how", ["inputs", "state"])
def test_a_flows_user_comes_from_its_inputs_or_state(store: Memory, how: str) -> None:
    flow = review_flow(CrewMemory(store), ScriptedFeedback(["Cite your sources."]))
    if how == "inputs":
        flow.kickoff(inputs={"user_id": "editor"})
    else:
        flow.state.user_id = "editor"
        flow.kickoff()
    store.drain_writes()
    assert [r.text for r in store.list(user_id="editor", kinds=["lesson"])] == [LESSON]

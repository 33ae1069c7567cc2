"""A crew object that ran with checkpoints, or was restored from one, never hands a kickoff or a
replay the outputs of another user's kickoff.

CrewAI marks such a crew for resumption and never clears the mark, so its next kickoff runs no
task and returns the previous kickoff's outputs (whoever it ran for), and a replay on it starts
after the last task holding an output. mnemic lets a kickoff resume only an unfinished kickoff of
the same user (see `integrations/crewai/resumption.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai import Crew
from crewai.events.event_bus import crewai_event_bus
from crewai.state.checkpoint_config import CheckpointConfig
from crewai_helpers import ScriptedLLM, final
from test_crewai_checkpoints import INTAKE, PLAN, config, make_crew

from mnemic import Memory
from mnemic.checkpoints import catalog
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory, replay, restore_crew


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.set_policy(mode="auto")
        yield mem


def per_user(text: str) -> str:
    """Each task's answer names the users its prompt mentions, so a leak shows in the output."""
    current = text.split("Current Task:", 1)[-1]
    who = " and ".join(name for name in ("alice", "bob") if name in current) or "nobody"
    return final(f"{'Notes' if INTAKE in current else 'Plan'} for {who}.")


def _task_prompts(llm: ScriptedLLM, task: str) -> list[str]:
    return [p for p in llm.prompts if task in p.split("Current Task:", 1)[-1]]


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_one_checkpointed_crew_object_runs_every_kickoff_for_its_own_user(kind: str, store: Memory,
                                                                          tmp_path: Path) -> None:
    llm = ScriptedLLM(responder=per_user)
    crew = make_crew(CrewMemory(store), llm, config(kind, tmp_path))
    first = crew.kickoff(inputs={"user_id": "alice", "message": "I am customer alice."})
    crewai_event_bus.flush()
    assert [t.raw for t in first.tasks_output] == ["Notes for alice.", "Plan for alice."]

    calls = len(llm.prompts)
    second = crew.kickoff(inputs={"user_id": "bob", "message": "I am customer bob."})
    assert len(_task_prompts(llm, INTAKE)) == 2 and len(_task_prompts(llm, PLAN)) == 2 and len(llm.prompts) > calls
    assert [t.raw for t in second.tasks_output] == ["Notes for bob.", "Plan for bob."]
    assert "alice" not in second.raw and all("alice" not in p for p in llm.prompts[calls:])

    # Each kickoff is its own run in the kickoff log, with its own user and outputs.
    assert second.kickoff_id != first.kickoff_id  # type: ignore[attr-defined]
    bobs = store.runs.get(second.kickoff_id)  # type: ignore[attr-defined]
    alices = store.runs.get(first.kickoff_id)  # type: ignore[attr-defined]
    assert bobs is not None and bobs.user_id == "bob" and "alice" not in str(bobs.to_dict())
    assert alices is not None and alices.user_id == "alice"
    assert [s.output["output"]["raw"] for s in alices.steps] == ["Notes for alice.", "Plan for alice."]

    # The same user kicking off again gets a new run too, not the last one's answers.
    third = crew.kickoff(inputs={"user_id": "bob", "message": "I am customer bob, again."})
    assert len(_task_prompts(llm, PLAN)) == 3 and third.kickoff_id != second.kickoff_id  # type: ignore[attr-defined]
    crewai_event_bus.flush()
    location = tmp_path / ("checkpoints.db" if kind == "sqlite" else "checkpoints")
    assert [i.user_id for i in catalog.list_checkpoints(location)] == ["alice"] * 2 + ["bob"] * 4


def test_a_restored_crew_resumes_only_for_the_user_its_checkpoint_was_for(store: Memory, tmp_path: Path) -> None:
    def plan_fails(text: str) -> str:
        if PLAN in text.split("Current Task:", 1)[-1]:
            raise RuntimeError("the model provider is down")
        return per_user(text)

    cfg = config("json", tmp_path)
    crew_memory = CrewMemory(store)
    with pytest.raises(Exception, match="provider is down"):
        make_crew(crew_memory, ScriptedLLM(responder=plan_fails), cfg).kickoff(
            inputs={"user_id": "alice", "message": "I am customer alice.", "account": "alice-7731"})
    crewai_event_bus.flush()
    saved = catalog.list_checkpoints(cfg.location)
    assert [i.user_id for i in saved] == ["alice"]  # after alice's first task

    for restore in (restore_crew, Crew.from_checkpoint):
        llm = ScriptedLLM(responder=per_user)
        crew = restore(CheckpointConfig(restore_from=saved[0].restore_from))
        for agent in crew.agents:
            agent.llm = llm
        # The restored object holds alice's filled-in task texts, inputs and event record: kicked
        # off for bob it ran "anew" but carried them into bob's run and bob's checkpoints.
        with pytest.raises(Exception, match="restored from a checkpoint of another user"):
            crew.kickoff(inputs={"user_id": "bob", "message": "I am customer bob."})
        assert llm.prompts == []
        assert store.runs.runs(user_id="bob") == []

    # Alice still resumes her own kickoff: her first task is not run again, its output is the context.
    llm = ScriptedLLM(responder=per_user)
    crew = restore_crew(CheckpointConfig(restore_from=saved[0].restore_from))
    for agent in crew.agents:
        agent.llm = llm
    resumed = crew.kickoff()
    assert _task_prompts(llm, INTAKE) == [] and "Notes for alice." in _task_prompts(llm, PLAN)[0]
    assert [t.raw for t in resumed.tasks_output] == ["Notes for alice.", "Plan for alice."]
    # Having run for alice here, the restored object is still hers.
    with pytest.raises(Exception, match="restored from a checkpoint of another user"):
        crew.kickoff(inputs={"user_id": "bob", "message": "I am customer bob."})


def test_a_replay_on_a_crew_object_that_last_ran_for_another_user_runs_the_replayed_tasks(
        store: Memory, tmp_path: Path) -> None:
    cfg = config("json", tmp_path)
    crew_memory = CrewMemory(store)
    alices = make_crew(crew_memory, ScriptedLLM(responder=per_user), cfg).kickoff(
        inputs={"user_id": "alice", "message": "I am customer alice."})
    llm = ScriptedLLM(responder=per_user)
    crew = make_crew(crew_memory, llm, cfg)  # the same crew (same key), another object
    crew.kickoff(inputs={"user_id": "bob", "message": "I am customer bob."})
    crewai_event_bus.flush()

    calls = len(llm.prompts)
    replayed = replay(crew, str(crew.tasks[1].id), kickoff_id=alices.kickoff_id)  # type: ignore[attr-defined]
    assert len(_task_prompts(llm, PLAN)) == 2 and len(llm.prompts) > calls  # the replayed task ran
    assert [t.raw for t in replayed.tasks_output] == ["Notes for alice.", "Plan for alice."]
    assert "bob" not in replayed.raw and all("bob" not in p for p in llm.prompts[calls:])

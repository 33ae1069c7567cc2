"""CrewAI's `@human_feedback(learn=True)` lessons live in mnemic's shared lesson store: the operator
CLI lists and withdraws them like LangGraph's, and a withdrawn lesson never reaches CrewAI's
pre-review again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from click.testing import CliRunner
from crewai.flow.flow import Flow, start
from crewai.flow.human_feedback import human_feedback
from crewai_helpers import ScriptedFeedback, ScriptedLLM

from mnemic import LessonStore, Memory
from mnemic.cli.main import cli
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory

LESSON = "Always sign off as the support team."
DRAFT = "Drafts about databases: PostgreSQL is the most popular choice for new projects."


def reviewer(prompt: str) -> str:
    if "Extract generalizable lessons" in prompt:
        return f"- {LESSON}"
    if "Lessons from past human feedback" in prompt:
        return DRAFT + " Regards, the support team."
    return "Thought: done\nFinal Answer: ok"


def make_flow(crew_memory: CrewMemory, llm: ScriptedLLM, feedback: ScriptedFeedback) -> Flow:  # type: ignore[type-arg]
    class DraftReview(Flow):  # type: ignore[type-arg]
        memory = crew_memory

        @start()
        @human_feedback(message="Review the draft:", llm=llm, learn=True, provider=feedback)
        def draft(self) -> str:
            return DRAFT

    return DraftReview()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def crew_memory(store_path: Path) -> Iterator[CrewMemory]:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.set_policy(mode="explicit")
        yield CrewMemory(memory, user_id="editor")


def pre_review_lessons(llm: ScriptedLLM) -> list[str]:
    prompts = [p for p in llm.prompts if "Lessons from past human feedback" in p]
    return [p.split("Lessons from past human feedback:", 1)[1] for p in prompts]


def test_crewai_lessons_are_in_the_shared_store_with_provenance(crew_memory: CrewMemory) -> None:
    llm = ScriptedLLM(responder=reviewer)
    make_flow(crew_memory, llm, ScriptedFeedback(["Sign off as the support team, always."])).kickoff()
    crew_memory.mnemic.drain_writes()
    (lesson,) = LessonStore(crew_memory.mnemic).list(user_id="editor")
    assert (lesson.text, lesson.where, lesson.framework) == (LESSON, "DraftReview/draft", "crewai")
    assert lesson.thread  # the flow run it came from
    assert lesson.record.metadata["method"] == "draft"  # CrewAI's own name for the step, as before


def test_the_methods_lessons_reach_the_next_pre_review(crew_memory: CrewMemory) -> None:
    llm = ScriptedLLM(responder=reviewer)
    make_flow(crew_memory, llm, ScriptedFeedback(["Sign off as the support team, always."])).kickoff()
    crew_memory.mnemic.drain_writes()
    llm.prompts.clear()
    make_flow(crew_memory, llm, ScriptedFeedback(["Looks good."])).kickoff()
    (shown,) = pre_review_lessons(llm)
    assert LESSON in shown


def test_the_cli_lists_and_withdraws_crewai_lessons(crew_memory: CrewMemory, store_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    llm = ScriptedLLM(responder=reviewer)
    make_flow(crew_memory, llm, ScriptedFeedback(["Sign off as the support team, always."])).kickoff()
    crew_memory.mnemic.drain_writes()
    # The CLI opens the store itself: this process's embedded store is released first.
    crew_memory.mnemic.close()
    monkeypatch.setenv("MNEMIC_STORE", str(store_path))
    monkeypatch.setenv("MNEMIC_EMBEDDER", "hash")
    runner = CliRunner()
    listed = runner.invoke(cli, ["lessons", "list", "--user", "editor", "--where", "DraftReview", "--json"],
                           catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    (item,) = json.loads(listed.output)
    assert (item["text"], item["flow"], item["step"], item["framework"]) == (LESSON, "DraftReview", "draft", "crewai")
    withdrawn = runner.invoke(cli, ["lessons", "invalidate", item["id"], "--reason", "we sign with names now"],
                              catch_exceptions=False)
    assert withdrawn.exit_code == 0, withdrawn.output

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.set_policy(mode="explicit")
        llm = ScriptedLLM(responder=reviewer)
        make_flow(CrewMemory(memory, user_id="editor"), llm, ScriptedFeedback([""])).kickoff()
        assert pre_review_lessons(llm) == []  # no valid lesson left: CrewAI skips its pre-review
        assert LessonStore(memory).get(item["id"]).invalid_reason == "we sign with names now"

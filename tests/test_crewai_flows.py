"""`@human_feedback(learn=True)` with a CrewMemory: lessons are stored as lessons of that flow and
method, and the pre-review sees lessons only (CrewAI's own Memory mixes in everything else)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai.flow.flow import Flow, start
from crewai.flow.human_feedback import human_feedback
from crewai_helpers import ScriptedFeedback, ScriptedLLM

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory

LESSON = "Always cite a source for every claim in a draft."


def reviewer(prompt: str) -> str:
    if "Extract generalizable lessons" in prompt:
        return f"- {LESSON}"
    if "Lessons from past human feedback" in prompt:
        return "Drafts about databases, with a source for every claim [1]."
    return "Thought: done\nFinal Answer: ok"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.set_policy(mode="explicit")
        yield mem


def make_flow(crew_memory: CrewMemory, llm: ScriptedLLM, feedback: ScriptedFeedback) -> Flow:  # type: ignore[type-arg]
    class DraftReview(Flow):  # type: ignore[type-arg]
        memory = crew_memory

        @start()
        @human_feedback(message="Review the draft:", llm=llm, learn=True, provider=feedback)
        def draft(self) -> str:
            return "Drafts about databases: PostgreSQL is the most popular choice for new projects."

    return DraftReview()


def test_feedback_lessons_are_stored_as_lessons_and_pre_review_sees_only_them(store: Memory) -> None:
    crew_memory = CrewMemory(store, user_id="editor")
    # A fact about the same user that matches the draft well: pre-review must not be shown it.
    crew_memory.remember("Drafts about databases should mention PostgreSQL first.")
    llm = ScriptedLLM(responder=reviewer)

    make_flow(crew_memory, llm, ScriptedFeedback(["Cite your sources, always."])).kickoff()
    store.drain_writes()
    lessons = store.list(user_id="editor", kinds=["lesson"])
    assert [r.text for r in lessons] == [LESSON]
    lesson = lessons[0]
    assert lesson.scope == "/lessons/DraftReview/draft"
    assert lesson.source == "hitl" and lesson.source_kind == "feedback"
    assert lesson.metadata["flow"] == "DraftReview" and lesson.metadata["method"] == "draft"

    # The next run reviews its draft against the lessons, and only the lessons.
    llm.prompts.clear()
    feedback = ScriptedFeedback(["Looks good."])
    make_flow(crew_memory, llm, feedback).kickoff()
    review_prompts = [p for p in llm.prompts if "Lessons from past human feedback" in p]
    assert len(review_prompts) == 1
    lessons_part = review_prompts[0].split("Lessons from past human feedback:", 1)[1]
    assert LESSON in lessons_part
    assert "mention PostgreSQL first" not in lessons_part
    # The human saw the reviewed draft.
    assert feedback.seen == ["Drafts about databases, with a source for every claim [1]."]

    # Lessons never reach task recall, and facts never reach lesson recall.
    task_recall = crew_memory.recall("drafts about databases cite sources", limit=10)
    assert task_recall and all(m.record.metadata.get("kind") == "fact" for m in task_recall)
    lesson_recall = crew_memory.recall("human feedback lessons for draft: databases", source="hitl")
    assert [m.record.content for m in lesson_recall] == [LESSON]


def test_lessons_of_one_method_are_not_served_to_another(store: Memory) -> None:
    crew_memory = CrewMemory(store, user_id="editor")
    store.remember_many([LESSON], user_id="editor", kind="lesson", scope="/lessons/DraftReview/summary",
                        source="hitl", source_kind="feedback",
                        metadata={"flow": "DraftReview", "method": "summary"})
    assert crew_memory.recall("human feedback lessons for draft: cite", source="hitl") == []
    found = crew_memory.recall("human feedback lessons for summary: cite", source="hitl")
    assert [m.record.content for m in found] == [LESSON]


def test_under_off_no_lesson_is_stored(store: Memory) -> None:
    store.set_policy(mode="off")
    crew_memory = CrewMemory(store, user_id="editor")
    llm = ScriptedLLM(responder=reviewer)
    make_flow(crew_memory, llm, ScriptedFeedback(["Cite your sources."])).kickoff()
    store.drain_writes()
    assert store.list(include_invalid=True) == []

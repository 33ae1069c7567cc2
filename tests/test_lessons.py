"""The lesson store every framework shares: per user, per place, with provenance, withdrawable, and
kept out of everything that serves ordinary memory."""

from __future__ import annotations

import json

import pytest
from scripted_llm import ScriptedLLM

from mnemic import Memory, PolicyError
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.lessons import Lesson, LessonPlace, LessonStore

WRITER = LessonPlace("writer", "draft")


@pytest.fixture
def lessons(memory: Memory) -> LessonStore:
    return LessonStore(memory)


def test_a_lesson_is_stored_with_its_place_and_provenance(lessons: LessonStore, memory: Memory) -> None:
    (lesson,) = lessons.learn(["  Cite a source for every claim. "], user_id="alice", place=WRITER,
                              reviewer="bob", thread="t1", review="r1", feedback="Cite sources!",
                              framework="langgraph")
    assert isinstance(lesson, Lesson)
    record = memory.get(lesson.id)
    assert record.kind == "lesson" and record.text == "Cite a source for every claim."
    assert record.scope == "/lessons/writer/draft" and record.source_kind == "feedback"
    assert (lesson.flow, lesson.step, lesson.where) == ("writer", "draft", "writer/draft")
    assert (lesson.reviewer, lesson.thread, lesson.review, lesson.framework) == ("bob", "t1", "r1", "langgraph")
    assert lesson.feedback == "Cite sources!"
    assert memory.history(lesson.id)[0].actor == "reviewer:bob"
    summary = lessons.list(user_id="alice")[0].summary()
    assert (summary["flow"], summary["step"], summary["reviewer"]) == ("writer", "draft", "bob")
    assert json.loads(json.dumps(summary)) == {  # what `mnemic lessons list --json` prints
        "id": lesson.id, "text": "Cite a source for every claim.", "user_id": "alice", "flow": "writer",
        "step": "draft", "state": "valid", "invalid_reason": None, "reviewer": "bob", "thread": "t1",
        "review": "r1", "framework": "langgraph", "feedback": "Cite sources!",
        "created_at": lesson.created_at.isoformat()}


def test_a_private_lesson_is_recalled_only_for_its_own_source(lessons: LessonStore) -> None:
    lessons.learn(["Agent A keeps drafts under 200 words."], user_id="alice", place=WRITER, private=True,
                  source="agent-a")
    lessons.learn(["Cite a source for every claim."], user_id="alice", place=WRITER)
    texts = {source: {lesson.text for lesson in lessons.recall("draft", user_id="alice", place=WRITER, source=source)}
             for source in ("agent-a", "agent-b", None)}
    assert texts["agent-a"] == {"Agent A keeps drafts under 200 words.", "Cite a source for every claim."}
    assert texts["agent-b"] == texts[None] == {"Cite a source for every claim."}


def test_the_same_words_at_two_places_are_two_lessons(lessons: LessonStore) -> None:
    lessons.learn(["Use bullet points for lists."], user_id="alice", place=WRITER)
    lessons.learn(["Use bullet points for lists."], user_id="alice", place=LessonPlace("writer", "summary"))
    assert [x.where for x in lessons.list(user_id="alice")] == ["writer/summary", "writer/draft"]
    assert [x.text for x in lessons.recall("anything", user_id="alice", place=LessonPlace("writer", "summary"))] == [
        "Use bullet points for lists."]


def test_repeats_merge_and_a_contradiction_replaces_within_a_place(lessons: LessonStore) -> None:
    first = lessons.learn(["Use bullet points for lists."], user_id="alice", place=WRITER)[0]
    again = lessons.learn(["Use bullet points for lists"], user_id="alice", place=WRITER)[0]
    assert again.id == first.id
    newer = lessons.learn(["Do not use bullet points for lists."], user_id="alice", place=WRITER)[0]
    states = {x.id: x for x in lessons.list(user_id="alice", include_invalid=True)}
    assert states[newer.id].state == "valid" and states[first.id].state == "invalid"


def test_lessons_never_cost_an_llm_reconciliation_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    llm = ScriptedLLM()
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm) as memory:
        store = LessonStore(memory)
        store.learn(["Cite a source for every claim."], user_id="alice", place=WRITER)
        store.learn(["Cite a source for each claim you make."], user_id="alice", place=WRITER)
        assert llm.calls == []


def test_a_slug_shared_by_two_places_does_not_share_lessons(lessons: LessonStore) -> None:
    lessons.learn(["Write in French."], user_id="alice", place=LessonPlace("my graph", "draft"))
    lessons.learn(["Write in German."], user_id="alice", place=LessonPlace("my-graph", "draft"))
    assert LessonPlace("my graph", "draft").scope() == LessonPlace("my-graph", "draft").scope()
    assert [x.text for x in lessons.recall("write", user_id="alice", place=LessonPlace("my graph", "draft"))] == [
        "Write in French."]
    assert [x.text for x in lessons.list(user_id="alice", place=LessonPlace("my-graph"))] == ["Write in German."]


def test_every_lesson_of_a_place_is_recalled_and_relevance_ranks_a_crowd(lessons: LessonStore) -> None:
    lessons.learn(["Sign off as the support team."], user_id="alice", place=WRITER)
    # No word in common with the query: still a lesson of this place.
    assert [x.text for x in lessons.recall("Quarterly revenue grew.", user_id="alice", place=WRITER)] == [
        "Sign off as the support team."]
    for n in range(12):
        lessons.learn([f"Rule number {n} about tables and layout {n}."], user_id="alice", place=WRITER)
    lessons.learn(["Quote revenue figures in euros."], user_id="alice", place=WRITER)
    found = lessons.recall("Quarterly revenue in euros grew.", user_id="alice", place=WRITER, limit=5)
    assert len(found) == 5 and found[0].text == "Quote revenue figures in euros." and found[0].score is not None


def test_lessons_are_per_user(lessons: LessonStore) -> None:
    lessons.learn(["Cite a source."], user_id="alice", place=WRITER)
    assert lessons.recall("cite", user_id="bob", place=WRITER) == []
    assert lessons.list(user_id="bob") == []
    assert [x.user_id for x in lessons.list()] == ["alice"]


def test_invalidate_withdraws_with_a_reason_and_refuses_what_is_not_a_lesson(lessons: LessonStore,
                                                                             memory: Memory) -> None:
    (lesson,) = lessons.learn(["Cite a source."], user_id="alice", place=WRITER)
    with pytest.raises(ValueError, match="not bob's"):
        lessons.invalidate(lesson.id, reason="x", user_id="bob")
    withdrawn = lessons.invalidate(lesson.id, reason="sources are optional now", actor="operator")
    assert withdrawn.state == "invalid" and withdrawn.invalid_reason == "sources are optional now"
    assert lessons.recall("cite", user_id="alice", place=WRITER) == []
    entries = len(memory.history(lesson.id))
    assert lessons.invalidate(lesson.id, reason="again").invalid_reason == "sources are optional now"
    assert len(memory.history(lesson.id)) == entries
    fact = memory.remember("Alice likes tea.", user_id="alice")
    assert fact is not None
    with pytest.raises(ValueError, match="not a lesson"):
        lessons.invalidate(fact.id, reason="x")
    with pytest.raises(KeyError):
        lessons.invalidate("nope", reason="x")


def test_withdraw_touches_only_the_users_lessons_at_that_place(lessons: LessonStore) -> None:
    here = lessons.learn(["Cite a source."], user_id="alice", place=WRITER)[0]
    elsewhere = lessons.learn(["Be brief."], user_id="alice", place=LessonPlace("writer", "summary"))[0]
    bobs = lessons.learn(["Cite a source."], user_id="bob", place=WRITER)[0]
    done = lessons.withdraw([here.id, elsewhere.id, bobs.id, "unknown"], user_id="alice", place=WRITER,
                            reason="rejected", actor="reviewer:x")
    assert [x.id for x in done] == [here.id]
    assert lessons.get(elsewhere.id).state == "valid" and lessons.get(bobs.id).state == "valid"


def test_the_same_review_is_stored_once(lessons: LessonStore) -> None:
    first = lessons.learn(["Cite a source.", "Be brief."], user_id="alice", place=WRITER, review="r1")
    again = lessons.learn(["Something else entirely."], user_id="alice", place=WRITER, review="r1")
    assert {x.id for x in again} == {x.id for x in first}
    assert len(lessons.list(user_id="alice")) == 2


def test_secrets_policy_and_erasure_hold_for_lessons(lessons: LessonStore, memory: Memory) -> None:
    assert lessons.learn(["Use the token ghp_abcdefghijklmnopqrstuvwxyz0123456789 to deploy."],
                         user_id="alice", place=WRITER) == []
    lessons.learn(["Cite a source."], user_id="alice", place=WRITER)
    memory.forget(user_id="alice")
    assert lessons.list(user_id="alice", include_invalid=True) == []
    memory.set_policy(mode="off")
    with pytest.raises(PolicyError):
        lessons.learn(["Cite a source."], user_id="alice", place=WRITER)


def test_bad_places_and_input_are_refused_clearly(lessons: LessonStore) -> None:
    assert LessonPlace.parse("writer/draft") == WRITER and LessonPlace.parse("writer") == LessonPlace("writer")
    assert LessonPlace.parse("/writer/sub/node/") == LessonPlace("writer", "sub/node")
    for bad in ("", "/", "  "):
        with pytest.raises(ValueError, match="flow/step"):
            LessonPlace.parse(bad)
    with pytest.raises(ValueError, match="non-empty"):
        LessonPlace("", "draft")
    with pytest.raises(ValueError, match="one step"):
        lessons.learn(["x"], user_id="alice", place=LessonPlace("writer"))
    assert lessons.learn([" ", 3, ""], user_id="alice", place=WRITER) == []  # type: ignore[list-item]



def test_a_limit_outside_the_range_is_refused_not_sliced(lessons: LessonStore) -> None:
    """limit=-1 used to slice off the oldest lesson and answer the rest as if that were all."""
    lessons.learn(["Cite a source for every claim.", "Use bullet points."], user_id="alice", place=WRITER)
    for bad in (-1, 0, 100_001):
        with pytest.raises(ValueError, match="limit must be between 1 and 100000"):
            lessons.list(user_id="alice", limit=bad)
    assert len(lessons.list(user_id="alice", limit=2)) == 2

# -- lessons stay out of ordinary memory ---------------------------------------------------------------

LESSON_TEXT = "Alice's drafts about databases cite PostgreSQL benchmarks."


def _fact_and_lesson(memory: Memory) -> None:
    memory.set_policy(mode="explicit", inject="profile")
    memory.remember("Alice prefers PostgreSQL for new databases.", user_id="alice")
    LessonStore(memory).learn([LESSON_TEXT], user_id="alice", place=WRITER)


def test_recall_and_profile_never_serve_lessons(memory: Memory) -> None:
    _fact_and_lesson(memory)
    query = "drafts about databases PostgreSQL benchmarks"
    assert [m.record.kind for m in memory.recall(query, user_id="alice")] == ["fact"]
    assert [m.record.kind for m in memory.recall(query, user_id="alice", kinds=["fact", "note"])] == ["fact"]
    assert "benchmarks" not in memory.profile("alice")
    # Asked for by name, they are there: that is how the lesson store reads them.
    assert [m.record.text for m in memory.recall(query, user_id="alice", kinds=["lesson"])] == [LESSON_TEXT]


def test_memory_tools_and_hooks_never_serve_lessons(memory: Memory) -> None:
    pytest.importorskip("langgraph")
    from mnemic.integrations.langgraph import MemoryHooks
    from mnemic.tools import core

    _fact_and_lesson(memory)
    query = "drafts about databases PostgreSQL benchmarks"
    assert "benchmarks" not in core.search_memory(memory, query, user_id="alice", limit=10)
    context = MemoryHooks(memory, profile=True).context_text("alice", query)
    assert "prefers PostgreSQL" in context and "benchmarks" not in context


def test_lessons_and_flows_import_without_any_agent_framework() -> None:
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("crewai", "langgraph", "langchain", "langchain_core"):
                    raise ImportError(f"{name} is blocked for this test")
                return None

        sys.meta_path.insert(0, Block())
        import mnemic.flows
        from mnemic import LessonStore, LessonPlace
        from mnemic.flows import rule_lessons
        assert rule_lessons("Cite sources.") == ["Cite sources."]
        try:
            mnemic.flows.human_feedback
        except ImportError as exc:
            assert "pip install 'mnemic[langgraph]'" in str(exc), exc
        else:
            raise AssertionError("human_feedback imported without LangGraph")
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_a_rejection_quoting_a_secret_still_withdraws_the_lesson(lessons: LessonStore) -> None:
    place = LessonPlace("writer", "draft")
    (lesson,) = lessons.learn(["Quote prices in euros."], user_id="alice", place=place, reviewer="rita")
    reason = "rejected by reviewer rita: never print the account, our password is Tr0ub4dor&3-horse"
    (withdrawn,) = lessons.withdraw([lesson.id], user_id="alice", place=place, reason=reason, actor="reviewer:rita")
    assert withdrawn.state == "invalid"
    assert "Tr0ub4dor" not in (withdrawn.invalid_reason or "")
    assert "rejected by reviewer rita" in (withdrawn.invalid_reason or "")

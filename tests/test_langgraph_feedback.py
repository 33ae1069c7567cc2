"""`mnemic.flows.human_feedback` on LangGraph: a review step that learns lessons per user and per
(graph, node), applies them before the human sees the next output, withdraws the ones a reviewer
rejects, and stays idempotent although LangGraph re-runs a node from its start on resume."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from example_runner import run_example

pytest.importorskip("langgraph")

from typing import Annotated

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, RetryPolicy

from mnemic import Memory
from mnemic.checkpoints import JsonCheckpointSaver, SqliteCheckpointSaver
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.lessons import LessonPlace, LessonStore
from mnemic.flows import human_feedback, review_node, unfenced
from mnemic.flows.feedback import PREREVIEW_SCHEMA
from mnemic.integrations.langgraph import IdentityError

SAVERS: dict[str, Callable[[Any], Any]] = {
    "InMemorySaver": lambda tmp_path: InMemorySaver(),
    "JsonCheckpointSaver": lambda tmp_path: JsonCheckpointSaver(tmp_path / "threads"),
    "SqliteCheckpointSaver": lambda tmp_path: SqliteCheckpointSaver(tmp_path / "threads.sqlite"),
}


class State(TypedDict, total=False):
    topic: str
    draft: str
    review: dict[str, Any]


class ReviewModel:
    """A scripted model for both calls of the review step. Pre-review: appends "[<lesson>]" for every
    lesson `apply` accepts and names those lessons as applied. Distillation: `lessons(feedback)`,
    and `rejected`. `fail=True` raises on every call (a provider outage)."""

    def __init__(self, *, apply: Callable[[str], bool] = lambda lesson: True,
                 lessons: Callable[[str], list[str]] | None = None, rejected: bool = False,
                 fail: bool = False) -> None:
        self.apply = apply
        self.lessons = lessons or (lambda feedback: [feedback])
        self.rejected = rejected
        self.fail = fail
        self.prereviews: list[tuple[str, list[str]]] = []
        self.distils: list[str] = []

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> Any:
        user = messages[-1]["content"]
        if schema is PREREVIEW_SCHEMA:
            numbered = re.findall(r"^\[(\d+)\] (.+)$", user.split("\n\nOutput:", 1)[0], re.M)
            output = dict(unfenced(user))["output"]
            self.prereviews.append((output, [text for _, text in numbered]))
            if self.fail:
                raise ConnectionError("provider down")
            chosen = [(int(n), text) for n, text in numbered if self.apply(text)]
            revised = output + "".join(f" [{text}]" for _, text in chosen)
            return json.dumps({"output": revised, "applied": [n for n, _ in chosen]})
        feedback = dict(unfenced(user))["feedback"]
        self.distils.append(feedback)
        if self.fail:
            raise ConnectionError("provider down")
        return {"lessons": self.lessons(feedback), "rejected": self.rejected}


@pytest.fixture
def memory(tmp_path: Any) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        yield mem


@pytest.fixture(params=sorted(SAVERS))
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return SAVERS[request.param](tmp_path)


def config(thread: str, user: str | None = "alice", **extra: Any) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread, **extra}
    if user is not None:
        configurable["user_id"] = user
    return {"configurable": configurable}


def writer(memory: Memory | None, model: Any, saver: Any, *, calls: list[str] | None = None,
           graph: str = "writer", node: str = "draft", llm_from_memory: bool = False, **options: Any) -> Any:
    """topic → draft (reviewed) → end."""
    made = calls if calls is not None else []
    if not llm_from_memory:
        options["llm"] = model

    def draft(state: State) -> dict[str, Any]:
        made.append(state["topic"])
        return {"draft": f"Draft {len(made)} about {state['topic']}."}

    builder = StateGraph(State)
    builder.add_node(node, human_feedback(draft, memory=memory, graph=graph, review_key="review", **options))
    builder.add_edge(START, node)
    builder.add_edge(node, END)
    return builder.compile(checkpointer=saver)


def review(graph: Any, answer: Any, thread: str, *, user: str | None = "alice",
           topic: str = "databases") -> tuple[dict[str, Any], dict[str, Any]]:
    """Run until the review interrupt, answer it; returns (interrupt payload, final state)."""
    stopped = graph.invoke({"topic": topic}, config(thread, user))
    payload = stopped["__interrupt__"][0].value
    return payload, graph.invoke(Command(resume=answer), config(thread, user))


def lessons(memory: Memory, user: str = "alice", **where: Any) -> list[Any]:
    place = LessonPlace(where.get("graph", "writer"), where.get("node", "draft"))
    return LessonStore(memory).list(user_id=user, place=place, include_invalid=True)


# -- learning and applying ---------------------------------------------------------------------------

def test_feedback_becomes_a_lesson_that_revises_the_next_output(memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: ["Cite a source for every claim."])
    graph = writer(memory, model, saver)

    payload, state = review(graph, "Please cite your sources.", "t1")
    assert payload["output"] == "Draft 1 about databases." and payload["lessons_applied"] == []
    assert model.prereviews == []  # no lessons yet: no pre-review call
    assert state["draft"] == "Draft 1 about databases."
    (lesson,) = lessons(memory)
    assert lesson.text == "Cite a source for every claim." and lesson.state == "valid"
    assert lesson.record.kind == "lesson" and lesson.record.scope == "/lessons/writer/draft"
    assert (lesson.reviewer, lesson.thread, lesson.framework) == ("alice", "t1", "langgraph")
    assert lesson.feedback == "Please cite your sources."
    assert state["review"]["lessons_learned"] == [lesson.id]

    payload, state = review(graph, {"approved": True, "reviewer": "editor-bob"}, "t2")
    assert model.prereviews == [("Draft 2 about databases.", ["Cite a source for every claim."])]
    assert payload["output"] == "Draft 2 about databases. [Cite a source for every claim.]"
    assert payload["original"] == "Draft 2 about databases."
    assert payload["lessons_applied"] == [{"id": lesson.id, "text": lesson.text}]
    assert payload["lessons_considered"] == payload["lessons_applied"]
    json.dumps(payload)  # what a client receives is plain JSON
    assert state["draft"] == payload["output"]
    assert state["review"]["approved"] is True and state["review"]["reviewer"] == "editor-bob"
    assert state["review"]["lessons_applied"] == [lesson.id] and state["review"]["lessons_withdrawn"] == []
    assert [x.state for x in lessons(memory)] == ["valid"]
    assert len(model.distils) == 1  # a bare approval is not sent for distillation


def test_node_and_pre_review_run_once_per_review_although_langgraph_reruns_the_node(
        memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: ["Keep drafts under 100 words."])
    calls: list[str] = []
    graph = writer(memory, model, saver, calls=calls)
    review(graph, "Keep it short.", "t1")
    assert calls == ["databases"]

    graph.invoke({"topic": "caching"}, config("t2"))
    assert calls == ["databases", "caching"] and len(model.prereviews) == 1
    state = graph.invoke(Command(resume="Fine."), config("t2"))
    # Resuming re-ran the node's function: neither the node nor the pre-review ran again, and the
    # reviewer's answer applied to the output they saw.
    assert calls == ["databases", "caching"] and len(model.prereviews) == 1
    assert state["draft"] == "Draft 2 about caching. [Keep drafts under 100 words.]"


def test_a_resume_replayed_from_the_checkpoint_stores_no_lesson_twice(memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: [f"Lesson from: {feedback}"])
    graph = writer(memory, model, saver)
    graph.invoke({"topic": "databases"}, config("t1"))
    waiting = graph.get_state(config("t1"))
    assert waiting.interrupts
    graph.invoke(Command(resume="Add a date."), config("t1"))
    # The same interrupt resumed again from its checkpoint (time travel): the node runs again with
    # the same review, which has already been learned from.
    replay = {"configurable": {**waiting.config["configurable"], "user_id": "alice"}}
    graph.invoke(Command(resume="Add a date."), replay)
    assert [x.text for x in lessons(memory)] == ["Lesson from: Add a date."]
    assert model.distils == ["Add a date."]


def test_a_node_retried_after_learning_stores_no_lesson_twice(memory: Memory, saver: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemic.flows.langgraph import FeedbackStep

    model = ReviewModel(lessons=lambda feedback: ["Write in the active voice."])
    finish = FeedbackStep.finish
    failures = iter([RuntimeError("the state write failed")])

    def flaky_finish(self: Any, *args: Any, **kwargs: Any) -> Any:
        error = next(failures, None)
        if error is not None:
            raise error
        return finish(self, *args, **kwargs)

    monkeypatch.setattr(FeedbackStep, "finish", flaky_finish)
    builder = StateGraph(State)
    builder.add_node("draft", human_feedback(lambda state: {"draft": "It was decided by us."}, memory=memory,
                                             llm=model, graph="writer", name="draft"),
                     retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.001, retry_on=RuntimeError))
    builder.add_edge(START, "draft")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"topic": "x"}, config("t1"))
    state = graph.invoke(Command(resume="Use the active voice."), config("t1"))
    assert state["draft"] == "It was decided by us."
    assert [x.text for x in lessons(memory)] == ["Write in the active voice."]
    assert model.distils == ["Use the active voice."]  # the retry found the review already learned


async def test_async_graph_learns_and_applies_once_per_review(memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: ["Open with the conclusion."])
    calls: list[str] = []

    @human_feedback(memory=memory, llm=model, graph="writer", review_key="review")
    async def draft(state: State) -> dict[str, Any]:
        calls.append(state["topic"])
        return {"draft": f"Draft {len(calls)}."}

    builder = StateGraph(State)
    builder.add_node(draft)
    builder.add_edge(START, "draft")
    graph = builder.compile(checkpointer=saver)
    await graph.ainvoke({"topic": "a"}, config("t1"))
    state = await graph.ainvoke(Command(resume="Lead with the conclusion."), config("t1"))
    assert state["review"]["lessons_learned"] and calls == ["a"]
    stopped = await graph.ainvoke({"topic": "b"}, config("t2"))
    assert stopped["__interrupt__"][0].value["output"] == "Draft 2. [Open with the conclusion.]"
    state = await graph.ainvoke(Command(resume={"approved": True}), config("t2"))
    assert calls == ["a", "b"] and len(model.prereviews) == 1
    assert state["draft"] == "Draft 2. [Open with the conclusion.]"


async def test_sync_node_in_an_async_run(memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: ["Use metric units."])
    calls: list[str] = []
    graph = writer(memory, model, saver, calls=calls)
    await graph.ainvoke({"topic": "a"}, config("t1"))
    await graph.ainvoke(Command(resume="Metric units, please."), config("t1"))
    await graph.ainvoke({"topic": "b"}, config("t2"))
    state = await graph.ainvoke(Command(resume=True), config("t2"))
    assert calls == ["a", "b"] and len(model.prereviews) == 1
    assert state["draft"] == "Draft 2 about b. [Use metric units.]"


# -- rejection withdraws exactly the lessons that shaped the output -----------------------------------

def _seed(memory: Memory, *texts: str, user: str = "alice", graph: str = "writer", node: str = "draft") -> list[str]:
    store = LessonStore(memory)
    return [store.learn([text], user_id=user, place=LessonPlace(graph, node), reviewer="seed")[0].id for text in texts]


def test_rejection_withdraws_the_applied_lessons_and_only_those(memory: Memory, saver: Any) -> None:
    applied_id, ignored_id = _seed(memory, "Mention the price in euros.", "Sign off as the support team.")
    model = ReviewModel(apply=lambda lesson: "euros" in lesson, lessons=lambda feedback: [])
    payload, state = review(writer(memory, model, saver), {"approved": False, "feedback": "Prices are in dollars."},
                            "t9")
    assert [item["id"] for item in payload["lessons_applied"]] == [applied_id]
    assert {item["id"] for item in payload["lessons_considered"]} == {applied_id, ignored_id}
    assert state["review"]["lessons_withdrawn"] == [applied_id]
    withdrawn = LessonStore(memory).get(applied_id)
    assert withdrawn.state == "invalid"
    assert "rejected by reviewer alice in thread t9" in (withdrawn.invalid_reason or "")
    assert "Prices are in dollars." in (withdrawn.invalid_reason or "")
    assert LessonStore(memory).get(ignored_id).state == "valid"  # recalled, not applied: kept
    history = memory.history(applied_id)
    assert history[-1].action == "invalidate" and history[-1].actor == "reviewer:alice"

    # Withdrawn lessons are never applied again.
    model.prereviews.clear()
    payload, _ = review(writer(memory, model, saver), True, "t10")
    assert model.prereviews[0][1] == ["Sign off as the support team."] and payload["lessons_applied"] == []


@pytest.mark.parametrize("answer", [
    "Looks good.",
    {"approved": True, "feedback": "Good, but shorter."},
    "Shorter, please.",  # changes asked for, no verdict: not a rejection
])
def test_no_rejection_no_withdrawal(memory: Memory, saver: Any, answer: Any) -> None:
    (lesson_id,) = _seed(memory, "Mention the price in euros.")
    model = ReviewModel(lessons=lambda feedback: [])
    _, state = review(writer(memory, model, saver), answer, "t1")
    assert state["review"]["lessons_applied"] == [lesson_id] and state["review"]["lessons_withdrawn"] == []
    assert LessonStore(memory).get(lesson_id).state == "valid"


@pytest.mark.parametrize("answer", [False, "Rejected: the prices are wrong.", "No, that is not right."])
def test_rejections_in_every_form_withdraw(memory: Memory, saver: Any, answer: Any) -> None:
    (lesson_id,) = _seed(memory, "Mention the price in euros.")
    _, state = review(writer(memory, ReviewModel(lessons=lambda feedback: []), saver), answer, "t1")
    assert state["review"]["approved"] is False and state["review"]["lessons_withdrawn"] == [lesson_id]


def test_free_text_judged_a_rejection_by_the_model_withdraws(memory: Memory, saver: Any) -> None:
    (lesson_id,) = _seed(memory, "Mention the price in euros.")
    model = ReviewModel(lessons=lambda feedback: [], rejected=True)
    _, state = review(writer(memory, model, saver), "This would confuse every customer we have.", "t1")
    assert state["review"]["approved"] is False and state["review"]["lessons_withdrawn"] == [lesson_id]


def test_a_rejection_with_nothing_applied_withdraws_nothing(memory: Memory, saver: Any) -> None:
    (lesson_id,) = _seed(memory, "Mention the price in euros.")
    model = ReviewModel(apply=lambda lesson: False, lessons=lambda feedback: [])
    payload, state = review(writer(memory, model, saver), False, "t1")
    assert payload["lessons_applied"] == [] and "original" not in payload
    assert state["review"]["lessons_withdrawn"] == []
    assert LessonStore(memory).get(lesson_id).state == "valid"


def test_a_lesson_taught_again_by_the_rejecting_feedback_is_stored_afresh(memory: Memory, saver: Any) -> None:
    (old_id,) = _seed(memory, "Mention the price in euros.")
    model = ReviewModel(lessons=lambda feedback: ["Mention the price in euros."])
    _, state = review(writer(memory, model, saver), False, "t1")
    assert state["review"]["lessons_withdrawn"] == [old_id] and state["review"]["lessons_learned"] == []
    _, state = review(writer(memory, model, saver), {"approved": False, "feedback": "Wrong currency."}, "t2")
    current = [x for x in lessons(memory) if x.state == "valid"]
    assert [x.text for x in current] == ["Mention the price in euros."] and current[0].id != old_id



API_KEY = "sk-proj-4fJq9XbT2LmN8pR7sV1wY3zA6cE0gH5k"


@pytest.mark.parametrize("reviewer", ["editor " + "x" * 293, "Bob\nSmith", f"bob {API_KEY}"],
                         ids=["long-name", "two-lines", "holds-a-key"])
def test_a_rejection_withdraws_whatever_the_reviewer_is_called(memory: Memory, saver: Any, reviewer: str) -> None:
    (lesson_id,) = _seed(memory, "Mention the price in euros.")
    model = ReviewModel(lessons=lambda feedback: [])
    _, state = review(writer(memory, model, saver),
                      {"approved": False, "feedback": "Prices are in dollars.", "reviewer": reviewer}, "t1")
    assert "learning_error" not in state["review"]
    assert state["review"]["lessons_withdrawn"] == [lesson_id]
    assert LessonStore(memory).get(lesson_id).state == "invalid"
    # One cleaned name everywhere: the result, the audit trail; never the key, never two lines.
    named = state["review"]["reviewer"]
    assert memory.history(lesson_id)[-1].actor == f"reviewer:{named}"
    assert API_KEY not in named and "\n" not in named and len(named) <= 200
    model.prereviews.clear()
    payload, _ = review(writer(memory, model, saver), True, "t2")
    assert model.prereviews == [] and payload["lessons_applied"] == []  # the withdrawn lesson is not applied


def test_a_rejection_by_a_user_with_the_longest_id_withdraws(memory: Memory, saver: Any) -> None:
    user = "u" * 256  # the longest user id; "reviewer:" + it is longer than an actor may be
    (lesson_id,) = _seed(memory, "Mention the price in euros.", user=user)
    _, state = review(writer(memory, ReviewModel(lessons=lambda feedback: []), saver), False, "t1", user=user)
    assert "learning_error" not in state["review"] and state["review"]["lessons_withdrawn"] == [lesson_id]


@pytest.mark.parametrize("feedback", ["Always cite sources. See page\x003.", "Always cite sources. Caf\udce9 notes."],
                         ids=["nul", "lone-surrogate"])
@pytest.mark.parametrize("llm", [None, ReviewModel(lessons=lambda feedback: ["Always cite sources.\x00"])],
                         ids=["rules", "model"])
def test_feedback_holding_a_nul_or_a_lone_surrogate_still_teaches(memory: Memory, saver: Any, feedback: str,
                                                                   llm: Any) -> None:
    _, state = review(writer(memory, llm, saver), feedback, "t1")
    assert "learning_error" not in state["review"]
    (lesson,) = lessons(memory)
    assert lesson.text == "Always cite sources."
    assert "\x00" not in (lesson.feedback or "") and "Always cite sources." in (lesson.feedback or "")
    assert "\x00" not in state["review"]["feedback"] and "\udce9" not in state["review"]["feedback"]


@pytest.mark.parametrize("output", ["Draft\x00 about databases.", "Draft \ud800 about databases."],
                         ids=["nul", "lone-surrogate"])
def test_an_output_is_reviewed_alike_whatever_the_number_of_lessons(memory: Memory, saver: Any,
                                                                     output: str) -> None:
    # Over max_lessons (10) the output ranks the lessons: it must not be refused as a query.
    _seed(memory, *[f"Rule number {i}: mention item {i}." for i in range(11)])
    calls: list[str] = []

    def draft(state: State) -> dict[str, Any]:
        calls.append(state["topic"])
        return {"draft": output}

    builder = StateGraph(State)
    builder.add_node("draft", human_feedback(draft, memory=memory, graph="writer", review_key="review",
                                             llm=ReviewModel(apply=lambda lesson: False, lessons=lambda f: [])))
    builder.add_edge(START, "draft")
    graph = builder.compile(checkpointer=saver)
    payload = graph.invoke({"topic": "x"}, config("t1"))["__interrupt__"][0].value
    assert payload["output"] == output and len(payload["lessons_considered"]) == 10
    state = graph.invoke(Command(resume=True), config("t1"))
    assert state["review"]["approved"] is True and calls == ["x"]


def test_lessons_are_served_newest_first_when_the_output_cannot_rank_them(tmp_path: Path) -> None:
    with Memory(tmp_path / "small", embedder=HashEmbedder(), max_text_chars=200) as memory:
        ids = _seed(memory, *[f"Rule number {i}: mention item {i}." for i in range(11)])
        found = LessonStore(memory).recall("word " * 500, user_id="alice", place=LessonPlace("writer", "draft"))
        assert [lesson.id for lesson in found] == ids[::-1][:10]

# -- without a model ----------------------------------------------------------------------------------

@pytest.mark.parametrize("llm", [None, ReviewModel(fail=True)], ids=["no-model", "model-down"])
def test_without_a_working_model_imperative_sentences_become_lessons(memory: Memory, saver: Any, llm: Any) -> None:
    graph = writer(memory, llm, saver)
    feedback = "The intro is too long. Please always cite a source for each claim! Why so formal?"
    review(graph, feedback, "t1")
    assert [x.text for x in lessons(memory)] == ["Always cite a source for each claim!"]
    # The next output reaches the reviewer unrevised (no model to revise it), with nothing applied.
    payload, _ = review(graph, True, "t2")
    assert payload["output"] == "Draft 2 about databases." and payload["lessons_applied"] == []


def test_secrets_in_feedback_never_reach_the_model_or_a_lesson(memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: [feedback])
    review(writer(memory, model, saver), "Use the key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 for the demo.",
           "t1")
    assert "sk-proj" not in model.distils[0]
    assert all("sk-proj" not in x.text for x in lessons(memory))


# -- who and where --------------------------------------------------------------------------------------

def test_lessons_are_per_user(memory: Memory, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: ["Cite a source for every claim."])
    graph = writer(memory, model, saver)
    review(graph, "Cite sources.", "t1", user="alice")
    payload, _ = review(graph, True, "t2", user="bob")
    assert payload["lessons_applied"] == [] and model.prereviews == []
    assert lessons(memory, user="bob") == []


def test_user_from_the_runtime_context(memory: Memory, saver: Any) -> None:
    from dataclasses import dataclass

    @dataclass
    class Ctx:
        user_id: str

    model = ReviewModel(lessons=lambda feedback: ["Be brief."])
    builder = StateGraph(State, context_schema=Ctx)
    builder.add_node("draft", human_feedback(lambda state: {"draft": "Long text."}, memory=memory, llm=model,
                                             graph="writer", name="draft"))
    builder.add_edge(START, "draft")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"topic": "x"}, config("t1", user=None), context=Ctx("carol"))
    graph.invoke(Command(resume="Be brief."), config("t1", user=None), context=Ctx("carol"))
    assert [x.text for x in lessons(memory, user="carol")] == ["Be brief."]


def test_lessons_belong_to_their_graph_and_node(memory: Memory, saver: Any) -> None:
    _seed(memory, "Mention the price in euros.", graph="writer", node="draft")
    _seed(memory, "Use bullet points.", graph="writer", node="summary")
    _seed(memory, "Write in French.", graph="translator", node="draft")
    model = ReviewModel(lessons=lambda feedback: [])
    review(writer(memory, model, saver, graph="writer", node="summary"), True, "t1")
    review(writer(memory, model, saver, graph="translator", node="draft"), True, "t2")
    assert [lessons_shown for _, lessons_shown in model.prereviews] == [["Use bullet points."], ["Write in French."]]


def test_a_run_without_a_user_is_refused_when_learning(memory: Memory, saver: Any) -> None:
    graph = writer(memory, ReviewModel(), saver)
    with pytest.raises(IdentityError, match="names no user"):
        graph.invoke({"topic": "x"}, config("t1", user=None))


def test_learn_false_is_a_plain_review(saver: Any) -> None:
    graph = writer(None, None, saver, learn=False)
    payload, state = review(graph, {"feedback": "ok", "output": "My own draft."}, "t1", user=None)
    assert payload["output"] == "Draft 1 about databases."
    assert state["draft"] == "My own draft." and state["review"]["edited"] is True


def test_under_policy_off_nothing_is_recalled_or_learned(memory: Memory, saver: Any) -> None:
    _seed(memory, "Mention the price in euros.")
    memory.set_policy(mode="off")
    model = ReviewModel()
    payload, state = review(writer(memory, model, saver), "Always cite sources.", "t1")
    assert payload["lessons_applied"] == [] and model.prereviews == [] and model.distils == []
    assert state["review"]["lessons_learned"] == [] and len(lessons(memory)) == 1


def test_a_run_that_opted_out_of_memory_writes_learns_nothing(memory: Memory, saver: Any) -> None:
    model = ReviewModel()
    graph = writer(memory, model, saver)
    graph.invoke({"topic": "x"}, config("t1", memory=False))
    graph.invoke(Command(resume="Always cite sources."), config("t1", memory=False))
    assert lessons(memory) == []


# -- answers, values and node shapes --------------------------------------------------------------------

def test_an_unreadable_answer_is_asked_again(memory: Memory, saver: Any) -> None:
    graph = writer(memory, ReviewModel(), saver)
    graph.invoke({"topic": "x"}, config("t1"))
    again = graph.invoke(Command(resume={"aproved": True}), config("t1"))
    payload = again["__interrupt__"][0].value
    assert "aproved" in payload["error"] and payload["output"] == "Draft 1 about x."
    state = graph.invoke(Command(resume={"approved": True}), config("t1"))
    assert state["review"]["approved"] is True


def test_the_reviewers_own_version_replaces_the_output(memory: Memory, saver: Any) -> None:
    _, state = review(writer(memory, ReviewModel(lessons=lambda f: []), saver),
                      {"output": "A better draft.", "feedback": "Rewrote it."}, "t1")
    assert state["draft"] == "A better draft." and state["review"]["edited"] is True


class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]


def test_the_last_message_is_reviewed_and_revised_in_place(memory: Memory, saver: Any) -> None:
    _seed(memory, "Greet the customer by name.", graph="support", node="reply")
    model = ReviewModel()

    def reply(state: Chat) -> dict[str, Any]:
        return {"messages": [AIMessage("Your refund is on its way.", id="ai-1")]}

    builder = StateGraph(Chat)
    builder.add_node("reply", human_feedback(reply, memory=memory, llm=model, graph="support"))
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=saver)
    stopped = graph.invoke({"messages": [HumanMessage("Where is my refund?", id="h-1")]}, config("t1"))
    assert stopped["__interrupt__"][0].value["output"] == "Your refund is on its way. [Greet the customer by name.]"
    state = graph.invoke(Command(resume=True), config("t1"))
    assert [m.id for m in state["messages"]] == ["h-1", "ai-1"]
    assert state["messages"][-1].content == "Your refund is on its way. [Greet the customer by name.]"



def _reply_graph(memory: Memory, saver: Any, model: Any) -> Any:
    builder = StateGraph(Chat)
    builder.add_node("reply", human_feedback(lambda state: {"messages": [AIMessage("Draft reply.", id="ai-1")]},
                                             memory=memory, llm=model, graph="support"))
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize("output", [123, {"junk": 1}, ["just text"], [], True],
                         ids=["number", "not-a-message", "list-of-text", "empty-list", "boolean"])
def test_an_own_version_that_is_no_message_is_asked_again_and_the_thread_goes_on(memory: Memory, saver: Any,
                                                                                 output: Any) -> None:
    graph = _reply_graph(memory, saver, ReviewModel(lessons=lambda feedback: [feedback]))
    graph.invoke({"messages": [HumanMessage("Where is my refund?", id="h-1")]}, config("t1"))
    again = graph.invoke(Command(resume={"output": output, "feedback": "Always greet the customer."}),
                         config("t1"))
    payload = again["__interrupt__"][0].value
    assert "'output' must be text" in payload["error"] and "message" in payload["error"]
    assert payload["output"] == "Draft reply."
    assert lessons(memory, graph="support", node="reply") == []  # nothing learned from a refused answer
    assert graph.get_state(config("t1")).next == ("reply",)  # the thread is readable, still at the review
    state = graph.invoke(Command(resume={"output": "Hello! Your refund is on its way."}), config("t1"))
    assert [(m.id, m.content) for m in state["messages"]] == [
        ("h-1", "Where is my refund?"), ("ai-1", "Hello! Your refund is on its way.")]


@pytest.mark.parametrize("output", [{"role": "assistant", "content": "Hello! It is on its way."},
                                    [{"role": "assistant", "content": "Hello! It is on its way."}],
                                    AIMessage("Hello! It is on its way.")], ids=["dict", "list", "message"])
def test_an_own_version_given_as_a_message_replaces_the_reviewed_one(memory: Memory, saver: Any,
                                                                      output: Any) -> None:
    graph = _reply_graph(memory, saver, ReviewModel(lessons=lambda feedback: []))
    graph.invoke({"messages": [HumanMessage("Where is my refund?", id="h-1")]}, config("t1"))
    state = graph.invoke(Command(resume={"output": output}), config("t1"))
    assert [(m.type, m.id, m.content) for m in state["messages"]] == [
        ("human", "h-1", "Where is my refund?"), ("ai", "ai-1", "Hello! It is on its way.")]


@pytest.mark.parametrize("output", [123, None, {"text": "x"}, ["x"]], ids=["number", "null", "dict", "list"])
def test_an_own_version_of_text_must_be_text(memory: Memory, saver: Any, output: Any) -> None:
    graph = writer(memory, ReviewModel(lessons=lambda feedback: []), saver)
    graph.invoke({"topic": "x"}, config("t1"))
    answered = graph.invoke(Command(resume={"output": output, "approved": True}), config("t1"))
    if output is None:  # null is "no own version", as for every other key of the answer
        assert answered["draft"] == "Draft 1 about x." and answered["review"]["edited"] is False
        return
    assert answered["__interrupt__"][0].value["error"].startswith(
        "Your answer could not be used: 'output' must be text, as the reviewed 'draft' is")
    state = graph.invoke(Command(resume={"output": "My draft."}), config("t1"))
    assert state["draft"] == "My draft." and state["review"]["edited"] is True


def test_an_own_version_of_a_structured_value_keeps_its_kind(memory: Memory, saver: Any) -> None:
    class Plan(TypedDict, total=False):
        topic: str
        plan: dict[str, Any]

    builder = StateGraph(Plan)
    builder.add_node("plan", human_feedback(lambda state: {"plan": {"steps": ["a", "b"]}}, memory=memory,
                                            llm=None, graph="planner"))
    builder.add_edge(START, "plan")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"topic": "x"}, config("t1"))
    again = graph.invoke(Command(resume={"output": "steps: a, c"}), config("t1"))
    assert "'output' must be a dict, as the reviewed 'plan' is" in again["__interrupt__"][0].value["error"]
    state = graph.invoke(Command(resume={"output": {"steps": ["a", "c"]}}), config("t1"))
    assert state["plan"] == {"steps": ["a", "c"]}

def test_a_command_from_the_node_keeps_its_route(memory: Memory, saver: Any) -> None:
    def draft(state: State) -> Command:  # type: ignore[type-arg]
        return Command(update={"draft": "A draft."}, goto="publish")

    def publish(state: State) -> dict[str, Any]:
        return {"topic": f"published: {state['draft']}"}

    builder = StateGraph(State)
    builder.add_node("draft", human_feedback(draft, memory=memory, llm=ReviewModel(), graph="writer"))
    builder.add_node("publish", publish)
    builder.add_edge(START, "draft")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"topic": "x"}, config("t1"))
    state = graph.invoke(Command(resume=True), config("t1"))
    assert state["topic"] == "published: A draft."


def test_a_runnable_node_and_a_review_node(memory: Memory, saver: Any) -> None:
    _seed(memory, "End with a question.", graph="writer", node="check")
    model = ReviewModel()
    builder = StateGraph(State)
    builder.add_node("draft", human_feedback(RunnableLambda(lambda state: {"draft": "Hello."}), memory=memory,
                                             llm=model, graph="writer", name="draft"))
    builder.add_node("check", review_node("draft", memory=memory, llm=model, graph="writer", review_key="review"))
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "check")
    graph = builder.compile(checkpointer=saver)
    first = graph.invoke({"topic": "x"}, config("t1"))
    assert first["__interrupt__"][0].value["node"] == "draft"
    second = graph.invoke(Command(resume="Fine."), config("t1"))
    assert second["__interrupt__"][0].value["node"] == "check"
    assert second["__interrupt__"][0].value["output"] == "Hello. [End with a question.]"
    state = graph.invoke(Command(resume=True), config("t1"))
    assert state["draft"] == "Hello. [End with a question.]" and state["review"]["approved"] is True


def test_bad_set_up_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="needs memory="):
        human_feedback(lambda state: {}, learn=True)
    with pytest.raises(ValueError, match="max_lessons"):
        human_feedback(lambda state: {}, learn=False, max_lessons=0)
    with pytest.raises(ValueError, match="overwrite"):
        human_feedback(lambda state: {}, learn=False, key="draft", review_key="draft")
    with pytest.raises(ValueError, match="limit is 200"):
        review_node("draft", learn=False, graph="g" * 300)


def test_a_langchain_chat_model_can_be_the_reviewers_model(memory: Memory, saver: Any) -> None:
    """Any chat model works as a `(messages, schema)` callable; a LangChain fake stands in here."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    chat = FakeMessagesListChatModel(responses=[
        AIMessage('{"lessons": ["Name the owner of every action item."], "rejected": false}'),
        AIMessage('```json\n{"output": "Draft 2 about databases. Owner: Alice.", "applied": [1]}\n```'),
    ])

    def model(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        return str(chat.invoke([(m["role"], m["content"]) for m in messages]).content)

    graph = writer(memory, model, saver)
    review(graph, "Every action item needs an owner.", "t1")
    payload, _ = review(graph, True, "t2")
    assert payload["output"] == "Draft 2 about databases. Owner: Alice."
    assert [item["text"] for item in payload["lessons_applied"]] == ["Name the owner of every action item."]


def test_the_memorys_model_is_used_when_none_is_given(tmp_path: Any, saver: Any) -> None:
    model = ReviewModel(lessons=lambda feedback: ["Use short sentences."])
    with Memory(tmp_path / "with-llm", embedder=HashEmbedder(), llm=model) as memory:
        review(writer(memory, None, saver, llm_from_memory=True), "Shorter sentences, please.", "t1")
        assert model.distils == ["Shorter sentences, please."]
        assert [x.text for x in lessons(memory)] == ["Use short sentences."]


def test_a_review_node_revises_the_last_message_in_place(memory: Memory, saver: Any) -> None:
    _seed(memory, "Greet the customer by name.", graph="support", node="check")
    builder = StateGraph(Chat)
    builder.add_node("reply", lambda state: {"messages": [AIMessage("Your refund is on its way.", id="ai-1")]})
    builder.add_node("check", review_node("messages", memory=memory, llm=ReviewModel(), graph="support",
                                          name="check"))
    builder.add_edge(START, "reply")
    builder.add_edge("reply", "check")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("Where is my refund?", id="h-1")]}, config("t1"))
    state = graph.invoke(Command(resume=True), config("t1"))
    assert [m.id for m in state["messages"]] == ["h-1", "ai-1"]
    assert state["messages"][-1].content == "Your refund is on its way. [Greet the customer by name.]"



def test_a_review_node_takes_the_reviewers_message_in_place_of_the_last(memory: Memory, saver: Any) -> None:
    builder = StateGraph(Chat)
    builder.add_node("reply", lambda state: {"messages": [AIMessage("Your refund is on its way.", id="ai-1")]})
    builder.add_node("check", review_node("messages", memory=memory, llm=None, graph="support", name="check"))
    builder.add_edge(START, "reply")
    builder.add_edge("reply", "check")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("Where is my refund?", id="h-1")]}, config("t1"))
    again = graph.invoke(Command(resume={"output": 42}), config("t1"))
    assert "'output' must be text" in again["__interrupt__"][0].value["error"]
    state = graph.invoke(Command(resume={"output": {"role": "assistant", "content": "Hello! On its way."}}),
                         config("t1"))
    assert [(m.id, m.content) for m in state["messages"]] == [("h-1", "Where is my refund?"),
                                                              ("ai-1", "Hello! On its way.")]

# -- the example --------------------------------------------------------------------------------

@pytest.mark.minilm
@pytest.mark.slow
def test_the_example_runs_offline(tmp_path: Path) -> None:
    out = run_example("langgraph_feedback.py", tmp_path / "store")
    second = out.split("[alice / t2]", 1)[1].split("[bob / t3]", 1)[0]
    assert "Questions? support@example.com" in second  # the lesson from t1 revised alice's next draft
    assert "(changed by the lesson: Always end with the support address.)" in second
    assert "support@example.com" not in out.split("[bob / t3]", 1)[1].split("[alice / t4]", 1)[0]
    assert "approved=False  learned=0  withdrawn=1" in out
    assert "[invalid] Always end with the support address." in out
    assert "bob's lessons: []" in out

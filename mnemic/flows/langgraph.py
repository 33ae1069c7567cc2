"""Human feedback that learns, for LangGraph: a review step on `interrupt()` / `Command(resume=...)`.

    from mnemic.flows import human_feedback

    @human_feedback(memory=memory, graph="writer", llm="gpt-4o-mini")
    def draft(state: State) -> dict:
        return {"draft": write_draft(state["topic"])}

    builder.add_node(draft)                     # or builder.add_node("draft", human_feedback(draft, ...))
    graph = builder.compile(checkpointer=InMemorySaver())          # interrupts need a checkpointer
    config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    graph.invoke({"topic": "databases"}, config)                    # stops: result["__interrupt__"]
    graph.invoke(Command(resume="Cite a source for every claim."), config)

When the node has run, the step recalls the run user's lessons for this graph and node, lets the
model revise the output against them (one call; none without lessons), and interrupts with the
output and the lessons that changed it. On resume it distils the feedback into lessons (one call, or
the feedback's imperative sentences without a model) stored for that user at (graph, node), with the
reviewer and thread as provenance. A rejection of an output that lessons changed withdraws those
lessons, with the feedback as the reason. See `mnemic.flows.feedback` for how a reviewer answers.

LangGraph runs a node again from its start when it resumes. The wrapped node and the pre-review
run as LangGraph tasks, whose results the checkpoint keeps, so on resume neither runs again: the
feedback applies to the output the reviewer saw, and the pre-review model call happens once per
review. Lessons are stored under the review's id, so a node run again after it learned (a retry)
does not store them twice. Async nodes need Python 3.11+, as LangGraph's async tasks do.

The user comes from the run, as for mnemic's tools: `config["configurable"]["user_id"]` or a runtime
context's `user_id`. A run that names no user is refused when learning is on: lessons are per user.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.config import get_config
from langgraph.func import task
from langgraph.types import interrupt

from ..core.lessons import LessonPlace, LessonStore, reviewer_actor
from ..core.llm import check_llm
from ..tools.langchain import USER_KEY, IdentityError, run_identity
from .feedback import AnswerError, ReviewAnswer, distil, read_answer, revise
from .node_output import edited, is_message, rebuilt, text_of, update_parts, with_text

if TYPE_CHECKING:
    from ..core.memory import Memory

log = logging.getLogger("mnemic.flows")

DEFAULT_GRAPH = "langgraph"
PAYLOAD_TYPE = "mnemic.human_feedback"
OUTPUT_TASK = "human_feedback.output"
PREREVIEW_TASK = "human_feedback.pre_review"
MAX_ASKS = 20
HOW_TO_ANSWER = (
    "Resume with Command(resume=...): feedback text; true or false to approve or reject; or "
    "{\"approved\": bool, \"feedback\": str, \"output\": your own version, \"reviewer\": str}."
)
NO_USER = (
    "human_feedback(learn=True) does not know whose lessons to use: this run names no user, and lessons "
    "are kept per user. Pass config={{'configurable': {{'{key}': 'alice', 'thread_id': ...}}}} or a runtime "
    "context with {key}, or use learn=False for a review that learns nothing."
)
ANSWER_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "description": "Feedback on the output."},
        {"type": "boolean", "description": "true approves the output, false rejects it."},
        {"type": "object", "additionalProperties": False, "properties": {
            "approved": {"type": "boolean"},
            "feedback": {"type": "string"},
            "output": {"description": "The reviewer's own version of the output, used instead of it."},
            "reviewer": {"type": "string"},
        }},
    ],
}
_USE_MEMORY_LLM: Any = object()
# `response_schema` tells a client what the answer looks like (LangGraph 1.2.x adds it).
_INTERRUPT_OPTIONS: dict[str, Any] = (
    {"response_schema": ANSWER_SCHEMA} if "response_schema" in inspect.signature(interrupt).parameters else {})


# -- one review, as the node sees it -----------------------------------------------------------------

@dataclass(frozen=True)
class _Run:
    user_id: str | None
    thread: str | None
    place: LessonPlace
    review_id: str
    learning: bool  # learn=True with a memory (and so a user)
    may_write: bool  # the run did not opt out of memory writes


def _as_task(name: str, work: Callable[[], Any]) -> Any:
    """Start `work` as a LangGraph task (a future; awaitable when `work` is async). LangGraph keeps a
    task's result with the checkpoint, so when it runs the node again on resume, the task is not."""
    make_task: Any = task  # its overloads do not describe a closure that takes no arguments
    return make_task(name=name)(work)()


class FeedbackStep:
    """The review step's behaviour, shared by `human_feedback` and `review_node`."""

    def __init__(self, *, memory: Memory | None, learn: bool, llm: Any, key: str | None, graph: str | None,
                 node: str | None, message: str | None, review_key: str | None, max_lessons: int,
                 user_key: str) -> None:
        if learn and memory is None:
            raise TypeError("human_feedback(learn=True) needs memory=: the mnemic Memory that keeps the lessons "
                            "(or learn=False for a review that learns nothing)")
        if not isinstance(max_lessons, int) or isinstance(max_lessons, bool) or not 1 <= max_lessons <= 100:
            raise ValueError(f"max_lessons must be an integer between 1 and 100, got {max_lessons!r}")
        for name, value in (("key", key), ("graph", graph), ("node", node), ("review_key", review_key)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if review_key is not None and review_key == key:
            raise ValueError(f"review_key={review_key!r} would overwrite the reviewed value: name another state key")
        LessonPlace(graph or DEFAULT_GRAPH, node)  # a name a lesson cannot carry is refused now, not mid-run
        self.memory = memory
        self.learn = learn
        self._llm = llm if llm is _USE_MEMORY_LLM else check_llm(llm)
        self.key = key
        self.graph = graph or DEFAULT_GRAPH
        self.node = node
        self.message = message
        self.review_key = review_key
        self.max_lessons = max_lessons
        self.user_key = user_key
        self.lessons = LessonStore(memory) if memory is not None else None

    @property
    def llm(self) -> Any:
        """The model both calls use: the one given, else the Memory's (read at call time, as the
        Memory reads its own)."""
        if self._llm is _USE_MEMORY_LLM:
            return self.memory.llm if self.memory is not None else None
        return self._llm

    # -- the run -----------------------------------------------------------------------------------

    def start(self, config: RunnableConfig) -> _Run:
        """Who and where this review is, read from the node's config. Raises IdentityError when
        learning is on and the run names no user (or two)."""
        who = run_identity(config, user_key=self.user_key)
        metadata = config.get("metadata") or {}
        configurable = config.get("configurable") or {}
        node = self.node or str(metadata.get("langgraph_node") or "node")
        # The node's checkpoint namespace names this task of this step; it is the same when the
        # node runs again on resume, and new for a new step or a fork of the thread.
        where = f"{who.session_id}\x00{configurable.get('checkpoint_ns') or metadata.get('langgraph_checkpoint_ns')}"
        review_id = "r" + hashlib.sha256(where.encode("utf-8")).hexdigest()[:24]
        learning = self.learn and self.memory is not None
        if learning and who.user_id is None:
            raise IdentityError(NO_USER.format(key=self.user_key))
        return _Run(user_id=who.user_id, thread=who.session_id, place=LessonPlace(self.graph, node),
                    review_id=review_id, learning=learning, may_write=who.memory)

    def _memory_on(self) -> bool:
        # Read when it matters (a review may wait hours for its answer): another process may
        # have turned memory off meanwhile.
        return self.memory is not None and self.memory.effective_policy().policy.mode != "off"

    # -- before the human sees it ------------------------------------------------------------------

    def prereview(self, run: _Run, text: str | None) -> dict[str, Any]:
        """The lessons for this place and the output revised against them (runs as a task)."""
        if not run.learning or text is None or not text.strip() or self.lessons is None or not self._memory_on():
            return {"output": text, "revised": False, "applied": [], "recalled": []}
        assert run.user_id is not None
        found = [lesson for lesson in self.lessons.recall(text, user_id=run.user_id, place=run.place,
                                                           limit=self.max_lessons)
                 if lesson.review != run.review_id]
        revision = revise(self.llm, text, [lesson.text for lesson in found], step=run.place.label)
        brief = [{"id": lesson.id, "text": lesson.text} for lesson in found]
        return {"output": revision.output, "revised": revision.revised,
                "applied": [brief[i] for i in revision.applied], "recalled": brief}

    def payload(self, run: _Run, key: str, value: Any, text: str | None, pre: dict[str, Any],
                error: str | None) -> dict[str, Any]:
        shown: Any = pre["output"] if text is not None else value
        payload: dict[str, Any] = {
            "type": PAYLOAD_TYPE,
            "message": self.message or f"Review the output of {run.place.step!r} ({key}).",
            "graph": run.place.flow,
            "node": run.place.step,
            "key": key,
            "output": shown,
            "lessons_applied": pre["applied"],
            "lessons_considered": pre["recalled"],
            "how_to_answer": HOW_TO_ANSWER,
        }
        if pre["revised"]:
            payload["original"] = text
        if error is not None:
            payload["error"] = f"Your answer could not be used: {error}. Answer again."
        return payload

    def ask(self, payload_for: Callable[[str | None], dict[str, Any]], key: str, value: Any,
            text: str | None) -> ReviewAnswer:
        """Interrupt until the reviewer gives an answer the step can read and whose own version
        fits the reviewed value (each retry is a new interrupt of this node, so earlier answers
        replay in order on resume). The answer's `output` is then the value the key will hold."""
        error: str | None = None
        for _ in range(MAX_ASKS):
            try:
                answer = read_answer(interrupt(payload_for(error), **_INTERRUPT_OPTIONS))
                if not answer.edited:
                    return answer
                return dataclasses.replace(answer, output=edited(value, text, answer.output, key))
            except AnswerError as exc:
                error = str(exc)
        raise AnswerError(f"no usable review answer after {MAX_ASKS} tries; the last problem: {error}")

    # -- after the human answered ------------------------------------------------------------------

    def conclude(self, run: _Run, answer: ReviewAnswer, pre: dict[str, Any]) -> dict[str, Any]:
        """Learn from the answer and say what happened. Never raises: the human has answered,
        and a failure to learn must not lose the review (it is logged and reported)."""
        reviewer = answer.reviewer or run.user_id
        result: dict[str, Any] = {
            "approved": answer.approved, "feedback": answer.feedback, "reviewer": reviewer,
            "edited": answer.edited, "revised": pre["revised"],
            "lessons_applied": [item["id"] for item in pre["applied"]],
            "lessons_learned": [], "lessons_withdrawn": [],
        }
        rejected_applied = answer.approved is False and bool(pre["applied"])
        if not run.learning or not run.may_write or self.lessons is None:
            return result
        if not answer.feedback and not rejected_applied:
            return result  # a bare approval (or a rejection of an output no lesson shaped): nothing to learn
        if not self._memory_on():
            return result
        assert run.user_id is not None
        try:
            learned = self.lessons.from_review(run.user_id, run.place, run.review_id)
            lessons: list[str] = []
            if not learned and answer.feedback:
                distilled = distil(self.llm, answer.feedback, pre["output"], step=run.place.label)
                lessons = distilled.lessons
                if answer.approved is None and distilled.rejected:
                    result["approved"] = False
            # Withdrawn first: a lesson the rejecting feedback teaches again is then stored afresh.
            if result["approved"] is False and pre["applied"]:
                reason = (f"rejected by reviewer {reviewer} in thread {run.thread} (review {run.review_id}), on an "
                          f"output this lesson changed" + (f": {answer.feedback}" if answer.feedback else ""))
                withdrawn = self.lessons.withdraw(result["lessons_applied"], user_id=run.user_id,
                                                  place=run.place, reason=reason,
                                                  actor=reviewer_actor(reviewer))
                result["lessons_withdrawn"] = [lesson.id for lesson in withdrawn]
            if not learned:
                learned = self.lessons.learn(
                    lessons, user_id=run.user_id, place=run.place, reviewer=reviewer, thread=run.thread,
                    review=run.review_id, feedback=answer.feedback, framework="langgraph",
                )
            result["lessons_learned"] = [lesson.id for lesson in learned]
        except Exception as exc:  # the review stands; what could not be learned is reported
            log.exception("human_feedback at %s could not learn from the review", run.place)
            result["learning_error"] = f"{type(exc).__name__}: {exc}"
        return result

    def finish(self, update: Any, values: dict[str, Any], key: str, value: Any, text: str | None,
               answer: ReviewAnswer, pre: dict[str, Any], result: dict[str, Any]) -> Any:
        if answer.edited:
            final = answer.output  # already fitted to the reviewed value by `ask`
        elif pre["revised"]:
            final = with_text(value, pre["output"])
        else:
            final = value
        values[key] = final
        if self.review_key is not None:
            values[self.review_key] = result
        return rebuilt(update, values)

    # -- the whole review, sync and async --------------------------------------------------------

    def review(self, update: Any, run: _Run) -> Any:
        values, key = update_parts(update, self.key)
        value = values[key]
        text = text_of(value)
        pre: dict[str, Any] = _as_task(PREREVIEW_TASK, lambda: self.prereview(run, text)).result()
        answer = self.ask(lambda error: self.payload(run, key, value, text, pre, error), key, value, text)
        result = self.conclude(run, answer, pre)
        return self.finish(update, values, key, value, text, answer, pre, result)

    async def areview(self, update: Any, run: _Run) -> Any:
        values, key = update_parts(update, self.key)
        value = values[key]
        text = text_of(value)

        async def prereview() -> dict[str, Any]:
            return await asyncio.to_thread(self.prereview, run, text)

        pre: dict[str, Any] = await _as_task(PREREVIEW_TASK, prereview)
        answer = self.ask(lambda error: self.payload(run, key, value, text, pre, error), key, value, text)
        result = await asyncio.to_thread(self.conclude, run, answer, pre)
        return self.finish(update, values, key, value, text, answer, pre, result)


# -- the public API ------------------------------------------------------------------------------------

def human_feedback(
    node: Any = None,
    /,
    *,
    memory: Memory | None = None,
    learn: bool = True,
    llm: Any = _USE_MEMORY_LLM,
    key: str | None = None,
    graph: str | None = None,
    name: str | None = None,
    message: str | None = None,
    review_key: str | None = None,
    max_lessons: int = 10,
    user_key: str = USER_KEY,
) -> Any:
    """A LangGraph node whose output a human reviews before the graph moves on, learning from it.

    Use it around a node (`human_feedback(draft, memory=m)`) or as a decorator
    (`@human_feedback(memory=m)`); add the result with `builder.add_node(...)` as the node itself.

    - `memory`: the mnemic Memory that keeps the lessons (per run user); needed when `learn`.
    - `learn`: recall lessons before the review and learn new ones from it (False: a plain review).
    - `llm`: revises the output against the lessons and distils feedback into lessons (a litellm
      model string or a callable `(messages, schema) -> str | dict`); the Memory's by default.
      Without one, the output is shown unrevised and lessons are taken by rule.
    - `key`: the state key the human reviews (default: the node's only key, or "messages", whose
      last message is reviewed).
    - `graph` / `name`: where lessons apply: the graph's name ("langgraph" when not given; name your
      graph when one user runs several graphs with a node of the same name) and the node's (default:
      the name the node runs under).
    - `message`: the line shown to the reviewer; `review_key`: a state key that receives the review's
      outcome (`approved`, `feedback`, `reviewer`, lessons applied/learned/withdrawn) for routing.
    - `max_lessons`: how many of the place's lessons the pre-review considers, most relevant first.
    """
    def wrap(inner: Any) -> Any:
        step = FeedbackStep(memory=memory, learn=learn, llm=llm, key=key, graph=graph, node=name,
                            message=message, review_key=review_key, max_lessons=max_lessons, user_key=user_key)
        return _wrap_node(inner, step)

    if node is None:
        return wrap
    return wrap(node)


def _wrap_node(inner: Any, step: FeedbackStep) -> Any:
    if isinstance(inner, Runnable):
        def run_sync(state: Any, config: RunnableConfig) -> Any:
            run = step.start(get_config())
            update = _as_task(OUTPUT_TASK, lambda: inner.invoke(state, config)).result()
            return step.review(update, run)

        async def run_async(state: Any, config: RunnableConfig) -> Any:
            run = step.start(get_config())

            async def produce() -> Any:
                return await inner.ainvoke(state, config)

            update = await _as_task(OUTPUT_TASK, produce)
            return await step.areview(update, run)

        return RunnableLambda(run_sync, afunc=run_async, name=getattr(inner, "name", None) or "human_feedback")
    if not callable(inner):
        raise TypeError(f"human_feedback wraps a node (a function or a Runnable), got {type(inner).__name__}")

    if _is_async(inner):
        @functools.wraps(inner)
        async def reviewed_async(*args: Any, **kwargs: Any) -> Any:
            run = step.start(get_config())

            async def produce() -> Any:
                return await inner(*args, **kwargs)

            update = await _as_task(OUTPUT_TASK, produce)
            return await step.areview(update, run)

        return reviewed_async

    # The signature LangGraph inspects is the node's (functools.wraps sets __wrapped__), so it passes
    # this wrapper what the node asks for (config, runtime, store, writer) and infers its input schema.
    @functools.wraps(inner)
    def reviewed(*args: Any, **kwargs: Any) -> Any:
        run = step.start(get_config())
        update = _as_task(OUTPUT_TASK, lambda: inner(*args, **kwargs)).result()
        return step.review(update, run)

    return reviewed


def _is_async(func: Any) -> bool:
    # A callable object whose __call__ is a coroutine function is an async node too.
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def review_node(
    key: str,
    *,
    memory: Memory | None = None,
    learn: bool = True,
    llm: Any = _USE_MEMORY_LLM,
    graph: str | None = None,
    name: str | None = None,
    message: str | None = None,
    review_key: str | None = None,
    max_lessons: int = 10,
    user_key: str = USER_KEY,
) -> Runnable[Any, Any]:
    """A node that reviews `state[key]`, written by an earlier node, with the same learning as
    `human_feedback`: `builder.add_node("review", review_node("draft", memory=m))`. It writes `key`
    back only when the pre-review or the reviewer changed it (for "messages", only the changed last
    message, which the messages reducer replaces by id). Lessons apply at the review node's name
    unless `name=` says otherwise."""
    step = FeedbackStep(memory=memory, learn=learn, llm=llm, key=key, graph=graph, node=name, message=message,
                        review_key=review_key, max_lessons=max_lessons, user_key=user_key)

    def current(state: Any) -> dict[str, Any]:
        value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
        if value is None:
            raise KeyError(f"review_node({key!r}): the state holds no {key!r} to review yet")
        return {key: value}

    def changed_only(reviewed: dict[str, Any], before: Any) -> dict[str, Any]:
        after = reviewed[key]
        out = {k: v for k, v in reviewed.items() if k != key}
        if after is before:
            return out
        if isinstance(after, list) and isinstance(before, list) and after and is_message(after[-1]) \
                and len(after) == len(before):
            out[key] = [after[-1]]
        else:
            out[key] = after
        return out

    def run_sync(state: Any, config: RunnableConfig) -> dict[str, Any]:
        run = step.start(get_config())
        update = current(state)
        return changed_only(step.review(dict(update), run), update[key])

    async def run_async(state: Any, config: RunnableConfig) -> dict[str, Any]:
        run = step.start(get_config())
        update = current(state)
        return changed_only(await step.areview(dict(update), run), update[key])

    return RunnableLambda(run_sync, afunc=run_async, name=name or "review")


__all__ = ["ANSWER_SCHEMA", "DEFAULT_GRAPH", "FeedbackStep", "human_feedback", "review_node"]

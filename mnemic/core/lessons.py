"""Lessons: what a human reviewer taught one step of a flow or graph, kept apart from memory.

A lesson ("Cite a source for every claim.") is distilled from a reviewer's feedback on the output of
one step: a CrewAI flow method under `@human_feedback(learn=True)`, or a LangGraph node wrapped by
`mnemic.flows.human_feedback`. It is a record of kind `lesson`, so what mnemic promises for memory
holds for it too (per-user collections, secrets refused, the policy's `off` respected, an audit
trail, erasure with the user), and two things hold for lessons only:

- A lesson belongs to a place, the (flow, step) it was learned at, and is served back only there:
  its scope is `/lessons/<flow>/<step>` (under a root an adapter may give) and the exact names ride
  in its metadata, so two places whose names share a slug never see each other's lessons. Lessons
  reconcile only with lessons of the same place (`write_pipeline`).
- Lessons are never mixed into ordinary recall, profiles or memory tools: they are read here, with
  `kinds=["lesson"]`, and nowhere else.

Each lesson carries its provenance: the reviewer, the thread (as `session_id`), the review it came
from, the framework, and an excerpt of the feedback. A lesson can be withdrawn (`invalidate`, with
a reason) and is then kept with its history but never served again; an adapter does this when a
reviewer rejects an output the lesson shaped.

The store works on a `LessonBackend` (what it needs of a `Memory`), so it never imports the facade.
"""

from __future__ import annotations

import builtins
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .records import MemoryMatch, MemoryRecord, normalise_text
from .safety import redact, redacted_prefix
from .scopes import ROOT, join_scope
from .validation import (
    MAX_REASON_CHARS,
    check_flag,
    check_ids,
    check_items,
    check_limit,
    check_new_user_id,
    check_text,
    check_user_id,
    scrub,
)

LESSON_KIND = "lesson"
LESSONS_ROOT = "/lessons"
# What a lesson's metadata holds (see `Lesson`); `method` is how lessons from CrewAI flows named
# the step before the store was shared, and is still read.
FLOW_KEY = "flow"
STEP_KEY = "step"
LEGACY_STEP_KEY = "method"
REVIEWER_KEY = "reviewer"
REVIEW_KEY = "review"
FRAMEWORK_KEY = "framework"
FEEDBACK_KEY = "feedback"
MAX_LESSON_CHARS = 500
MAX_LABEL_CHARS = 200
MAX_LESSONS_PER_REVIEW = 10
MAX_QUERY_CHARS = 4000  # enough words to rank a place's lessons by; the rest of a long output adds little
log = logging.getLogger("mnemic")
_SLUG_BAD = re.compile(r"[^\w.@:+-]+", re.UNICODE)


class LessonBackend(Protocol):
    """What the lesson store needs of a mnemic `Memory` (which provides all of it)."""

    namespace: str

    def remember(self, text: str, *, user_id: str | None, scope: str | None = ...,
                 categories: Sequence[str] | None = ..., importance: float | None = ..., author: str = ...,
                 source_kind: str = ..., session_id: str | None = ..., private: bool = ...,
                 source: str | None = ..., metadata: dict[str, Any] | None = ..., kind: str = ...,
                 actor: str | None = ...) -> MemoryRecord | None: ...

    def remember_many(self, texts: Iterable[str], **options: Any) -> builtins.list[str]: ...

    def recall(self, query: str, *, user_id: str | None, limit: int = ..., scope: Any = ...,
               kinds: Sequence[str] | None = ..., source: str | None = ...) -> builtins.list[MemoryMatch]: ...

    def list(self, *, user_id: str | None = ..., scope: Any = ..., include_invalid: bool = ...,
             kinds: Sequence[str] | None = ..., limit: int = ...) -> builtins.list[MemoryRecord]: ...

    def get(self, record_id: str) -> MemoryRecord: ...

    def invalidate(self, record_id: str, *, reason: str, actor: str = ...,
                   replaced_by: str | None = ...) -> MemoryRecord: ...


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a lesson's {what} must be a non-empty string (e.g. the graph or flow name), got {value!r}")
    text = " ".join(value.split())
    if len(text) > MAX_LABEL_CHARS:
        raise ValueError(f"a lesson's {what} is {len(text)} characters; the limit is {MAX_LABEL_CHARS}")
    return text


def slug(value: str) -> str:
    """A name as one scope segment (letters, digits and . _ - @ : +)."""
    cleaned = _SLUG_BAD.sub("-", value.strip()).strip("-")
    return (cleaned or "unnamed")[:128]


@dataclass(frozen=True)
class LessonPlace:
    """Where lessons apply: a flow or graph, and optionally one step of it (method or node).

    `LessonPlace("writer", "draft")` is the node `draft` of the graph `writer`; `LessonPlace("writer")` stands
    for every step of it when listing. `LessonPlace.parse("writer/draft")` reads the CLI's form.
    """

    flow: str
    step: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "flow", _name(self.flow, "flow (or graph)"))
        if self.step is not None:
            object.__setattr__(self, "step", _name(self.step, "step (method or node)"))

    @classmethod
    def parse(cls, text: str) -> LessonPlace:
        """"flow/step" or "flow" (the first "/" separates them)."""
        if not isinstance(text, str) or not text.strip().strip("/"):
            raise ValueError(f"a place is 'flow/step' or 'flow', e.g. 'writer/draft'; got {text!r}")
        flow, _, step = text.strip().strip("/").partition("/")
        return cls(flow, step or None)

    @property
    def label(self) -> str:
        return self.flow if self.step is None else f"{self.flow}/{self.step}"

    def scope(self, root: str = ROOT) -> str:
        path = f"{LESSONS_ROOT}/{slug(self.flow)}"
        if self.step is not None:
            path += f"/{slug(self.step)}"
        return join_scope(root, path)

    def holds(self, lesson: Lesson) -> bool:
        """Whether a lesson was learned here (at this step, or anywhere in this flow)."""
        if lesson.flow != self.flow:
            return False
        return self.step is None or lesson.step == self.step

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class Lesson:
    """A lesson record with its place and provenance read out; `score` when it was recalled."""

    record: MemoryRecord
    score: float | None = None

    def _meta(self, key: str) -> str | None:
        value = self.record.metadata.get(key)
        return str(value) if value is not None else None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def text(self) -> str:
        return self.record.text

    @property
    def user_id(self) -> str:
        return self.record.user_id

    @property
    def flow(self) -> str | None:
        return self._meta(FLOW_KEY)

    @property
    def step(self) -> str | None:
        return self._meta(STEP_KEY) or self._meta(LEGACY_STEP_KEY)

    @property
    def where(self) -> str:
        """"flow/step" as the CLI shows it ("?" for a part an old lesson does not name)."""
        return f"{self.flow or '?'}/{self.step or '?'}"

    @property
    def reviewer(self) -> str | None:
        return self._meta(REVIEWER_KEY)

    @property
    def thread(self) -> str | None:
        return self.record.session_id

    @property
    def review(self) -> str | None:
        return self._meta(REVIEW_KEY)

    @property
    def framework(self) -> str | None:
        return self._meta(FRAMEWORK_KEY)

    @property
    def feedback(self) -> str | None:
        return self._meta(FEEDBACK_KEY)

    @property
    def state(self) -> str:
        return self.record.state

    @property
    def invalid_reason(self) -> str | None:
        return self.record.invalid_reason

    @property
    def created_at(self) -> datetime:
        return self.record.created_at

    def summary(self) -> dict[str, Any]:
        """A JSON-ready dict of every property above (CLI `--json`, interrupt payloads)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in _SUMMARY_FIELDS}
        out["created_at"] = self.created_at.isoformat()
        return out


# What `Lesson.summary()` shows, in order; `where` is left out (it is derived from flow and step).
_SUMMARY_FIELDS = ("id", "text", "user_id", "flow", "step", "state", "invalid_reason", "reviewer", "thread",
                   "review", "framework", "feedback", "created_at")


def clean_label(value: Any) -> str | None:
    """Provenance as stored beside a lesson (a reviewer's name, the feedback's excerpt, a thread):
    one line, repaired like observed text (NUL dropped, a lone surrogate made U+FFFD: a reviewer's
    paste is not refused halfway through a review), screened for secrets like the lesson, capped.
    None when nothing is left."""
    if value is None:
        return None
    text = " ".join(scrub(str(value)).split())
    if not text:
        return None
    text, _ = redact(text)
    return text if len(text) <= MAX_LABEL_CHARS else text[:MAX_LABEL_CHARS - 1] + "…"


def reviewer_actor(reviewer: str | None) -> str:
    """The audit trail's actor for what a reviewer did to lessons (taught or withdrew them). Built
    here only, so learning and withdrawing name a reviewer alike, and within an actor's limits: a
    raw name (long, multi-line, holding a key) was refused as an actor, which made a rejection
    fail to withdraw the lessons it rejected."""
    label = clean_label(reviewer)
    return f"reviewer:{label}" if label else "reviewer"


def clean_lessons(texts: Iterable[Any]) -> builtins.list[str]:
    """Lesson texts as stored: strings only, one line each, repaired like observed text (a model's
    or a reviewer's NUL would make the store refuse the whole review's lessons), trimmed, capped,
    without repeats."""
    kept: builtins.list[str] = []
    seen: set[str] = set()
    for text in texts:
        if not isinstance(text, str):
            continue
        line = " ".join(scrub(text).split()).strip(" -*•")
        if not line:
            continue
        if len(line) > MAX_LESSON_CHARS:
            line = line[:MAX_LESSON_CHARS - 1].rstrip() + "…"
        key = normalise_text(line)
        if key and key not in seen:
            seen.add(key)
            kept.append(line)
    return kept[:MAX_LESSONS_PER_REVIEW]


class LessonStore:
    """Record, recall, list and withdraw lessons, per user and per place, on a mnemic Memory.

    `root` places every lesson scope under a subtree (a CrewAI memory's `root_scope`). Raises
    PolicyError from `learn` when the namespace's memory mode is `off`; reads return nothing then.
    """

    def __init__(self, memory: LessonBackend, *, root: str = ROOT) -> None:
        self.memory = memory
        self.root = join_scope(ROOT, root)

    # -- writing ----------------------------------------------------------------------------------

    def learn(
        self,
        texts: Iterable[str],
        *,
        user_id: str,
        place: LessonPlace,
        reviewer: str | None = None,
        thread: str | None = None,
        review: str | None = None,
        feedback: str | None = None,
        framework: str | None = None,
        source: str | None = None,
        categories: Sequence[str] | None = None,
        importance: float | None = None,
        private: bool = False,
        metadata: dict[str, str | int | float | bool] | None = None,
        background: bool = False,
    ) -> builtins.list[Lesson]:
        """Store lessons for `user_id` at `place` and return the lessons that now stand for them
        (a lesson said before merges into the one already stored; a secret is refused).

        `review` names the review they came from: storing the same review again (a node that
        LangGraph re-ran) returns what that review stored instead of writing twice.
        `background=True` queues them on the memory's writer and returns [] (CrewAI's way).
        `source`, `categories`, `importance` and `private` keep their memory meaning (a private
        lesson is recalled only with its own `source`).
        """
        owner = check_new_user_id(user_id)
        check_flag(background, name="background")
        if place.step is None:
            raise ValueError("lessons are learned at one step: give LessonPlace(flow, step)")
        lessons = clean_lessons(check_items(texts, name="texts", what="a lesson or a list of lessons (strings)",
                                            example="texts=['Cite a source for every figure.']"))
        if not lessons:
            return []
        if review is not None and not background:
            earlier = self.from_review(owner, place, review)
            if earlier:
                return earlier
        meta: dict[str, str | int | float | bool] = dict(metadata or {})
        provenance = {FLOW_KEY: place.flow, STEP_KEY: place.step, REVIEWER_KEY: clean_label(reviewer),
                      REVIEW_KEY: clean_label(review), FRAMEWORK_KEY: clean_label(framework),
                      FEEDBACK_KEY: clean_label(feedback)}
        meta.update({k: v for k, v in provenance.items() if v is not None})
        options: dict[str, Any] = {
            "user_id": owner, "kind": LESSON_KIND, "scope": place.scope(self.root), "author": "user",
            "source_kind": "feedback", "session_id": clean_label(thread), "source": source, "metadata": meta,
            "actor": reviewer_actor(reviewer),
            "categories": categories, "importance": importance, "private": private,
        }
        if background:
            self.memory.remember_many(lessons, **options)
            return []
        stored = [self.memory.remember(text, **options) for text in lessons]
        return [Lesson(record) for record in stored if record is not None]

    def invalidate(self, lesson_id: str, *, reason: str, actor: str = "operator",
                   user_id: str | None = None) -> Lesson:
        """Withdraw a lesson: kept with its history and `reason`, never served again.

        Raises KeyError for an unknown id, ValueError for a record that is not a lesson (or not
        `user_id`'s, when given). Withdrawing a withdrawn lesson changes nothing.
        """
        record = self.memory.get(lesson_id)
        if record.kind != LESSON_KIND:
            raise ValueError(f"{lesson_id} is a {record.kind}, not a lesson: use `mnemic memory invalidate` for it")
        if user_id is not None and record.user_id != check_user_id(user_id):
            raise ValueError(f"lesson {lesson_id} is not {user_id}'s")
        if record.state == "invalid":
            return Lesson(record)
        why = check_text(reason, name="reason", max_chars=2000)
        return Lesson(self.memory.invalidate(lesson_id, reason=why, actor=actor))

    def withdraw(self, lesson_ids: Iterable[str], *, user_id: str, place: LessonPlace, reason: str,
                 actor: str) -> builtins.list[Lesson]:
        """Withdraw the given lessons of `user_id` learned at `place` (others are left alone)
        and return those withdrawn now. The reason quotes a reviewer, so a secret in it is
        redacted and repaired (as in a lesson's provenance) rather than refusing the withdrawal."""
        owner = check_user_id(user_id)
        reason = redacted_prefix(scrub(reason), MAX_REASON_CHARS)
        withdrawn = []
        for lesson_id in dict.fromkeys(check_ids(lesson_ids, name="lesson_ids")):
            try:
                lesson = Lesson(self.memory.get(lesson_id))
            except KeyError:
                continue
            if lesson.record.kind != LESSON_KIND or lesson.user_id != owner or not place.holds(lesson):
                continue
            if lesson.state == "invalid":
                continue
            withdrawn.append(self.invalidate(lesson_id, reason=reason, actor=actor))
        return withdrawn

    # -- reading ----------------------------------------------------------------------------------

    def recall(self, query: str | None, *, user_id: str, place: LessonPlace, limit: int = 10,
               source: str | None = None) -> builtins.list[Lesson]:
        """Up to `limit` servable lessons of `user_id` learned at `place`.

        Every lesson of a place is about that place's output, so none is dropped for want of
        words in common with `query`: when the place holds more than `limit`, the ones recall
        finds most relevant to `query` come first and the newest fill the rest.
        """
        owner = check_user_id(user_id)
        # A private lesson is served back to the source that learned it only, as recall serves
        # any private record (serving.may_serve); the list below is the operator's and has them all.
        held = [lesson for lesson in self.list(user_id=owner, place=place, limit=100_000)
                if lesson.record.is_servable() and not (lesson.record.private and lesson.record.source != source)]
        # The query is whatever the step produced (an adapter passes its output), not a question a
        # caller typed: it is repaired, not refused. A NUL in a node's output failed every review
        # of a place with more than `limit` lessons, and so every retry of its thread.
        ranking = " ".join(scrub(query).split())[:MAX_QUERY_CHARS] if query is not None else ""
        if len(held) <= limit or not ranking:
            return held[:limit]
        try:
            matches = self.memory.recall(ranking, user_id=owner, limit=min(limit * 2, 1000),
                                         scope=place.scope(self.root), kinds=[LESSON_KIND], source=source)
        except ValueError as exc:  # e.g. a Memory whose max_text_chars is below MAX_QUERY_CHARS
            log.warning("lessons at %s are served newest first: the query could not rank them: %s", place, exc)
            return held[:limit]
        by_id = {lesson.id: lesson for lesson in held}
        # A slug shared by two places puts both in one scope: only this place's lessons count.
        ranked = [Lesson(m.record, m.score) for m in matches if m.record.id in by_id]
        chosen = {lesson.id for lesson in ranked}
        return [*ranked, *(lesson for lesson in held if lesson.id not in chosen)][:limit]

    def list(self, *, user_id: str | None = None, place: LessonPlace | None = None, include_invalid: bool = False,
             limit: int = 100) -> builtins.list[Lesson]:
        """Lessons newest first: one user's (or every user's, for an operator), at one place, one
        flow or everywhere."""
        limit = check_limit(limit, maximum=100_000)  # as Memory.list: a negative one must not slice off the oldest
        owner = check_user_id(user_id) if user_id is not None else None
        scope = place.scope(self.root) if place is not None else self.root
        records = self.memory.list(user_id=owner, scope=scope, include_invalid=include_invalid,
                                   kinds=[LESSON_KIND], limit=100_000)
        lessons = [Lesson(r) for r in records if r.kind == LESSON_KIND]
        if place is not None:
            lessons = [lesson for lesson in lessons if place.holds(lesson)]
        return lessons[:limit]

    def get(self, lesson_id: str) -> Lesson:
        """A lesson by id, whatever its state. KeyError when unknown, ValueError when not a lesson."""
        record = self.memory.get(lesson_id)
        if record.kind != LESSON_KIND:
            raise ValueError(f"{lesson_id} is a {record.kind}, not a lesson")
        return Lesson(record)

    def from_review(self, user_id: str, place: LessonPlace, review: str) -> builtins.list[Lesson]:
        """The lessons one review stored at `place` (withdrawn ones too)."""
        wanted = clean_label(review)
        return [lesson for lesson in self.list(user_id=user_id, place=place, include_invalid=True, limit=100_000)
                if lesson.review == wanted]


__all__ = [
    "LESSONS_ROOT",
    "LESSON_KIND",
    "Lesson",
    "LessonBackend",
    "LessonPlace",
    "LessonStore",
    "clean_label",
    "clean_lessons",
    "reviewer_actor",
    "slug",
]

"""Lessons from `@human_feedback(learn=True)`: what a CrewMemory does with CrewAI's calls whose
`source` is a lesson source ("hitl", CrewAI's `learn_source`, by default).

CrewAI distils a reviewer's feedback into lessons and stores them with
`remember_many(lessons, source=learn_source)`; before the next review of the same method it asks
`recall(f"human feedback lessons for {method}: {output}", source=learn_source)`. Both go to mnemic's
`LessonStore` (the one LangGraph's review step and `mnemic lessons` use): lessons are records of kind
`lesson` at the place (flow, method), under the CrewMemory's root scope, never facts about the
user, and a lesson recall returns every lesson of that method (CrewAI's own memory mixes them with
task memories). CrewAI does not pass the method to `remember_many`; the flow-method step the kickoff
hooks recorded says which one it is (the pre-review query also names it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from crewai.memory.types import MemoryMatch

from ...core.lessons import Lesson, LessonPlace, LessonStore
from ...core.memory import Memory as MnemicMemory
from ...core.records import MemoryMatch as CoreMatch
from ...core.records import ScoreBreakdown
from . import context
from .convert import clean_metadata, to_crewai_matches

log = logging.getLogger("mnemic.crewai")

DEFAULT_LESSON_SOURCES: tuple[str, ...] = ("hitl",)
# Lessons learned where CrewAI did not say which flow or method was reviewed.
UNKNOWN_FLOW = "unknown-flow"
UNKNOWN_METHOD = "unknown-method"

_LESSON_QUERY = re.compile(r"\Ahuman feedback lessons for (?P<method>[^:\n]+):")


def lesson_place(query: str | None = None) -> tuple[str | None, str | None]:
    """(flow, method) of the human-feedback step running now, each None when unknown."""
    step = context.current_flow_step()
    flow = step.flow_name if step is not None else None
    method = step.method if step is not None else None
    if flow is None:
        from crewai.flow.flow_context import current_flow_name

        flow = current_flow_name.get()
    if method is None and query:
        found = _LESSON_QUERY.match(query)
        method = found.group("method").strip() if found else None
    return flow, method


def _as_match(lesson: Lesson) -> CoreMatch:
    return CoreMatch(record=lesson.record, score=lesson.score if lesson.score is not None else 1.0,
                     breakdown=ScoreBreakdown())


class CrewLessons:
    """A CrewMemory's lessons: which `source` values are lessons, storing them, recalling them."""

    def __init__(self, memory: MnemicMemory, sources: Sequence[str]) -> None:
        self._memory = memory
        self.sources = frozenset([sources] if isinstance(sources, str) else sources)

    def handles(self, source: str | None) -> bool:
        return source is not None and source in self.sources

    def recall(self, query: str, *, user_id: str, root: str, limit: int, categories: list[str] | None,
               source: str | None) -> list[MemoryMatch]:
        """The lessons of the flow method under review (the most relevant first when it has more
        than `limit`)."""
        store = LessonStore(self._memory, root=root)
        flow, method = lesson_place(query)
        if flow is not None and method is not None:
            found = store.recall(query, user_id=user_id, place=LessonPlace(flow, method), limit=1000, source=source)
        else:
            # A step CrewAI did not fully name: what the lessons' own metadata says decides.
            found = [lesson for lesson in store.list(user_id=user_id, limit=100_000)
                     if lesson.record.is_servable() and (flow is None or lesson.flow == flow)
                     and (method is None or lesson.step == method)]
        found = [lesson for lesson in found if not lesson.record.private or lesson.record.source == source]
        if categories:
            found = [lesson for lesson in found if set(categories) & set(lesson.record.categories)]
        return to_crewai_matches([_as_match(lesson) for lesson in found[:limit]], note=None)

    def learn(self, items: list[str], *, user_id: str, root: str, categories: list[str] | None,
              importance: float | None, source: str | None, private: bool,
              metadata: dict[str, Any] | None) -> None:
        """Queue lessons of the flow method being reviewed (the reviewer wrote them: author user)."""
        flow, method = lesson_place()
        if flow is None or method is None:
            log.warning("a CrewAI lesson was learned outside a known flow method; it is kept under %s/%s",
                        flow or UNKNOWN_FLOW, method or UNKNOWN_METHOD)
        kick = context.current_kickoff()
        LessonStore(self._memory, root=root).learn(
            items, user_id=user_id, place=LessonPlace(flow or UNKNOWN_FLOW, method or UNKNOWN_METHOD),
            thread=kick.kickoff_id if kick is not None else None, framework="crewai", source=source,
            categories=categories, importance=importance, private=private,
            metadata=clean_metadata({**(metadata or {}), "method": method}), background=True,
        )


__all__ = ["DEFAULT_LESSON_SOURCES", "CrewLessons", "lesson_place"]

"""Lessons from `@human_feedback(learn=True)`: what a CrewMemory does with CrewAI's calls whose
`source` is a lesson source ("hitl", CrewAI's `learn_source`, by default).

CrewAI distils a reviewer's feedback into lessons and stores them with
`remember_many(lessons, source=learn_source)`; before the next review of the same method it asks
`recall(f"human feedback lessons for {method}: {output}", source=learn_source)`. In mnemic they are
records of kind `lesson`, scoped to the flow and method (`<root>/lessons/<flow>/<method>`), never
facts about the user, and a lesson recall returns lessons of that method only (CrewAI's own memory
mixes them with task memories). CrewAI does not pass the method to `remember_many`; the flow-method
step the kickoff hooks recorded says which one it is (the pre-review query also names it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from crewai.memory.types import MemoryMatch

from ...core.memory import Memory as MnemicMemory
from ...core.scopes import join_scope
from . import context
from .convert import clean_metadata, to_crewai_matches

DEFAULT_LESSON_SOURCES: tuple[str, ...] = ("hitl",)
LESSONS_ROOT = "/lessons"

_LESSON_QUERY = re.compile(r"\Ahuman feedback lessons for (?P<method>[^:\n]+):")
_SLUG_BAD = re.compile(r"[^\w.@:+-]+", re.UNICODE)


def _slug(value: str) -> str:
    cleaned = _SLUG_BAD.sub("-", value.strip()).strip("-")
    return (cleaned or "unnamed")[:128]


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


def lesson_scope(root: str, flow: str | None, method: str | None) -> str:
    """Where the lessons of a flow method live under a CrewMemory's root scope."""
    path = LESSONS_ROOT
    if flow is not None:
        path += f"/{_slug(flow)}"
        if method is not None:
            path += f"/{_slug(method)}"
    return join_scope(root, path)


class CrewLessons:
    """A CrewMemory's lessons: which `source` values are lessons, storing them, recalling them."""

    def __init__(self, memory: MnemicMemory, sources: Sequence[str]) -> None:
        self._memory = memory
        self.sources = frozenset([sources] if isinstance(sources, str) else sources)

    def handles(self, source: str | None) -> bool:
        return source is not None and source in self.sources

    def recall(self, query: str, *, user_id: str, root: str, limit: int, categories: list[str] | None,
               source: str | None) -> list[MemoryMatch]:
        """The lessons of the flow method under review, most relevant first."""
        flow, method = lesson_place(query)
        # Without the flow the scope cannot name the method; the lessons' metadata can.
        wanted = limit if flow is not None or method is None else max(limit * 4, 40)
        lessons = self._memory.recall(query, user_id=user_id, limit=wanted, kinds=["lesson"],
                                      scope=lesson_scope(root, flow, method), categories=categories,
                                      source=source)
        if flow is None and method is not None:
            lessons = [m for m in lessons if m.record.metadata.get("method") == method]
        return to_crewai_matches(lessons[:limit], note=None)

    def learn(self, items: list[str], *, user_id: str, root: str, categories: list[str] | None,
              importance: float | None, source: str | None, private: bool,
              metadata: dict[str, Any] | None) -> None:
        """Queue lessons of the flow method being reviewed (the reviewer wrote them: author user)."""
        flow, method = lesson_place()
        extra = clean_metadata({**(metadata or {}), "flow": flow, "method": method})
        self._memory.remember_many(
            items, user_id=user_id, kind="lesson", scope=lesson_scope(root, flow, method), categories=categories,
            importance=importance, author="user", source_kind="feedback", source=source,
            private=private, metadata=extra,
        )


__all__ = ["DEFAULT_LESSON_SOURCES", "LESSONS_ROOT", "CrewLessons", "lesson_place", "lesson_scope"]

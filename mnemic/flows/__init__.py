"""Human feedback that learns: review steps whose feedback becomes lessons for the next run.

    from mnemic.flows import human_feedback, review_node     # LangGraph (pip install 'mnemic[langgraph]')

CrewAI's `@human_feedback(learn=True)` learns through `mnemic.integrations.crewai.CrewMemory`; both
keep their lessons in one `mnemic.core.lessons.LessonStore`, which `mnemic lessons list|invalidate`
reads. The LangGraph names are imported on first use, so `import mnemic.flows` needs no framework.
"""

from __future__ import annotations

from typing import Any

from ..core.fences import unfenced
from ..core.lessons import Lesson, LessonPlace, LessonStore
from .feedback import AnswerError, ReviewAnswer, distil, read_answer, revise, rule_lessons, verdict_of

_LANGGRAPH_NAMES = frozenset({"human_feedback", "review_node", "FeedbackStep", "ANSWER_SCHEMA"})


def __getattr__(name: str) -> Any:
    if name in _LANGGRAPH_NAMES:
        try:
            from . import langgraph
        except ImportError as exc:
            raise ImportError(f"mnemic.flows.{name} needs LangGraph: pip install 'mnemic[langgraph]'") from exc
        return getattr(langgraph, name)
    raise AttributeError(f"module 'mnemic.flows' has no attribute {name!r}")


__all__ = [
    "ANSWER_SCHEMA",
    "AnswerError",
    "FeedbackStep",
    "Lesson",
    "LessonPlace",
    "LessonStore",
    "ReviewAnswer",
    "distil",
    "human_feedback",
    "read_answer",
    "review_node",
    "revise",
    "rule_lessons",
    "unfenced",
    "verdict_of",
]

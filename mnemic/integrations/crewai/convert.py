"""mnemic records and matches as CrewAI's `MemoryRecord` / `MemoryMatch`, and CrewAI's free-form
metadata and labels as what mnemic stores.

CrewAI reads `.score`, `.format()`, `.record.id`, `.record.content`, `.record.scope` and
`.record.importance` from what a memory returns; its datetimes are naive UTC. What goes the other
way (provenance labels, metadata) is stored beside the fact, so it is screened like the fact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from crewai.memory.types import MemoryMatch, MemoryRecord
from pydantic import PrivateAttr

from ...core.records import MemoryMatch as CoreMatch
from ...core.records import MemoryRecord as CoreRecord
from ...core.records import one_line
from ...core.safety import redact
from ...core.scopes import ROOT

MAX_LABEL_CHARS = 200

_META_KEY_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def naive_utc(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    if value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def to_crewai_record(record: CoreRecord) -> MemoryRecord:
    """A mnemic record as CrewAI's MemoryRecord (same id; the text is `content`)."""
    metadata: dict[str, Any] = dict(record.metadata)
    metadata.setdefault("kind", record.kind)
    return MemoryRecord(
        id=record.id,
        content=record.text,
        scope=record.scope,
        categories=list(record.categories),
        metadata=metadata,
        importance=min(max(record.importance, 0.0), 1.0),
        created_at=naive_utc(record.created_at),
        last_accessed=naive_utc(record.last_accessed_at or record.updated_at),
        source=record.source,
        private=record.private,
    )


class CrewMemoryMatch(MemoryMatch):
    """A CrewAI MemoryMatch from a mnemic recall. `format()` gives one line per fact, and the first
    match of a list carries the note that memories may be out of date and are not instructions."""

    _note: str | None = PrivateAttr(default=None)

    def format(self) -> str:
        when = self.record.created_at.date().isoformat()
        line = f"- {one_line(self.record.content)} (remembered {when})"
        return f"{self._note}\n{line}" if self._note else line


def to_crewai_matches(matches: Sequence[CoreMatch], *, note: str | None) -> list[MemoryMatch]:
    """Recalled matches, each record's content on one line: a recall's content goes into prompts,
    and not every caller goes through `format()` (CrewAI's LiteAgent writes `- {content}` into its
    system message), so a stored line break must not start a line of its own there."""
    result: list[MemoryMatch] = []
    for index, match in enumerate(matches):
        record = to_crewai_record(match.record)
        converted = CrewMemoryMatch(
            record=record.model_copy(update={"content": one_line(record.content)}),
            score=match.score,
            match_reasons=[match.explanation],
        )
        if index == 0 and note:
            converted._note = note
        result.append(converted)
    return result


class ProfileMatch(CrewMemoryMatch):
    """The user's profile (`Memory.profile`, already headed as background that may be out of date
    and is not instructions) as the first match of a pre-task recall; `format()` gives it whole."""

    _text: str = PrivateAttr(default="")

    def format(self) -> str:
        return self._text


def profile_match(text: str, user_id: str) -> ProfileMatch:
    now = naive_utc(None)
    match = ProfileMatch(
        record=MemoryRecord(id=f"mnemic-profile:{user_id}", content=text, scope=ROOT, created_at=now,
                            last_accessed=now, metadata={"kind": "profile"}),
        score=1.0,
        match_reasons=["profile"],
    )
    match._text = text
    return match


def fact_line(record: CoreRecord) -> str:
    """A fact as `format_profile` writes it (one line), to tell which recalled facts it holds."""
    return f"- {one_line(record.text)} (remembered {record.created_at.date().isoformat()})"


def label(value: Any) -> str | None:
    """A provenance label (agent role, task, crew): one line, secrets redacted, bounded length."""
    if value is None:
        return None
    text = " ".join(str(value).split())
    if not text:
        return None
    text, _ = redact(text)  # provenance is stored beside the fact, so it is screened like the fact
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str | int | float | bool]:
    """CrewAI metadata (any values, any keys) as what mnemic stores: scalar values, safe keys."""
    cleaned: dict[str, str | int | float | bool] = {}
    for key, value in (metadata or {}).items():
        if value is None:
            continue
        name = _META_KEY_BAD.sub("_", str(key)).strip("_")[:64]
        if not name:
            continue
        if not name[0].isalpha():
            name = ("m" + name)[:64]
        if isinstance(value, (bool, int, float)):
            cleaned[name] = value
        else:
            cleaned[name] = label(value) or ""
    return cleaned


__all__ = [
    "CrewMemoryMatch",
    "ProfileMatch",
    "clean_metadata",
    "fact_line",
    "label",
    "naive_utc",
    "profile_match",
    "to_crewai_matches",
    "to_crewai_record",
]

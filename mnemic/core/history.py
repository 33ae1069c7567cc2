"""The audit trail: one entry per mutation, so an operator can answer "why does the agent believe this?".

Entries are written to Chroma before the mutation they describe and carry the record version the
mutation produces. If the process dies between the two writes, the entry's version is ahead of
the record's and `applied_entries` leaves it out: the trail never claims a change that did not land.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from .records import MemoryRecord, utcnow

Action = Literal["add", "update", "invalidate", "confirm", "delete", "forget", "merge"]


class HistoryEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    entry_id: str
    record_id: str
    user_id: str
    action: Action
    actor: str
    reason: str | None = None
    before: str | None = None
    after: str | None = None
    state_before: str | None = None
    state_after: str | None = None
    at: datetime
    version: int
    details: dict[str, Any] = {}


def entry(
    action: Action,
    *,
    record: MemoryRecord,
    actor: str,
    before: MemoryRecord | None,
    after: MemoryRecord | None,
    reason: str | None = None,
    version: int,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    now = utcnow()
    return {
        "entry_id": uuid.uuid4().hex,
        "record_id": record.id,
        "user_id": record.user_id,
        "action": action,
        "actor": actor,
        "reason": reason,
        "before": before.text if before is not None else None,
        "after": after.text if after is not None else None,
        "state_before": before.state if before is not None else None,
        "state_after": after.state if after is not None else None,
        "at": now.isoformat(),
        "at_ts": now.timestamp(),
        "version": version,
        "details": details or {},
    }


def applied_entries(raw: list[dict[str, Any]], current_version: int | None) -> list[HistoryEntry]:
    """Entries whose mutation landed, oldest first. `current_version` is None when the record no
    longer exists.

    A change that failed may have left its entry (written first; see the module docstring). Its
    version is the one the next change of the record produces again, and only the last attempt
    at a version can have landed: earlier entries for the same version are left out."""
    entries = [HistoryEntry.model_validate(item) for item in raw]
    last_attempt = {e.version: position for position, e in enumerate(entries)}
    entries = [e for position, e in enumerate(entries) if last_attempt[e.version] == position]
    if current_version is not None:
        return [e for e in entries if e.version <= current_version]
    # Gone: the trail is true up to its last removal. Without one the record never landed.
    removals = [i for i, e in enumerate(entries) if e.action in ("delete", "forget")]
    return entries[: removals[-1] + 1] if removals else []


# What an entry may keep of a record whose text was erased: who did what, when, to which version.
_REDACTED_KEEPS = ("entry_id", "record_id", "user_id", "action", "actor", "state_before", "state_after",
                   "at", "at_ts", "version")


def redacted(raw: dict[str, Any]) -> dict[str, Any]:
    """An entry without anything the record said: its texts, and the reason and details, which can
    quote them (a merge's reason quotes the repeated statement). Marked so a reader can tell."""
    kept = {key: raw[key] for key in _REDACTED_KEEPS if key in raw}
    return {**kept, "before": None, "after": None, "reason": None, "details": {"redacted": True}}


# What a record retired by a replacement says of it once the replacement is erased.
ERASED_REASON = "replaced by a statement since erased"


def without_reason(raw: dict[str, Any]) -> dict[str, Any]:
    """An entry whose reason is gone, because it may quote a record being erased (a fact retired
    by a replacement says why, and an LLM's reason can quote the replacement)."""
    return {**raw, "reason": ERASED_REASON}


class HistoryLog(Protocol):
    """Where a namespace's audit entries live: Chroma (shared by every process of a server) or the
    local database of an embedded store. Entries are dicts made by `entry()`."""

    def add(self, entries: Sequence[dict[str, Any]]) -> None: ...

    def for_record(self, record_id: str) -> list[dict[str, Any]]: ...

    def ids_for_records(self, record_ids: Sequence[str]) -> list[str]: ...

    def removed(self, record_ids: Sequence[str]) -> set[str]:
        """Which of `record_ids` were deleted or erased once (their id is not free for a new record)."""
        ...

    def delete(self, entry_ids: Sequence[str]) -> None: ...

    def redact(self, record_ids: Sequence[str]) -> None: ...

    def drop_reasons(self, record_ids: Sequence[str], action: Action) -> None:
        """Forget why the records' `action` entries were made (see `without_reason`)."""
        ...

    def clear(self) -> None:
        """Every entry of the namespace (reset)."""
        ...

"""The audit trail: one entry per mutation, so an operator can answer "why does the agent believe this?".

Entries are written to Chroma before the mutation they describe and carry the record version the
mutation produces. If the process dies between the two writes, the entry's version is ahead of
the record's and `applied_entries` leaves it out: the trail never claims a change that did not land.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

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

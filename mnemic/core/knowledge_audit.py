"""The knowledge store's audit entries and rollback steps.

Knowledge changes are operator actions on many chunks at once, so their audit trail groups chunk
ids per entry (store/knowledge.py: HISTORY_IDS_PER_ENTRY) instead of one entry per record as
memory does; a removal keeps who and when, never the text.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

from .knowledge_chunks import KnowledgeChunk
from .records import utcnow
from .store.knowledge import HISTORY_IDS_PER_ENTRY

log = logging.getLogger("mnemic")


def undo(what: str, action: Callable[[], None]) -> None:
    """One rollback step. A failure here is logged, not raised: the caller re-raises the error
    that caused the rollback, which is the one the operator needs to see. Anything left behind
    is found by `repair()` (the generation no longer matches the index)."""
    try:
        action()
    except Exception as exc:
        log.error("knowledge rollback could not %s: %s", what, exc)


def new_generation() -> float:
    # Any change of value means "changed"; 52 random bits survive a round trip through a float.
    return float(uuid.uuid4().int >> 76)


def audit_entries(action: Literal["add", "delete"], chunks: Sequence[KnowledgeChunk], *, actor: str,
                     reason: str | None = None, group: str | None = None) -> list[dict[str, Any]]:
    """Audit entries for one mutation: one entry per HISTORY_IDS_PER_ENTRY chunks, listing their
    ids. The text itself is kept when a single chunk is added or removed."""
    now = utcnow()
    single = chunks[0] if len(chunks) == 1 else None
    sources = sorted({c.source or "" for c in chunks})
    entries = []
    for start in range(0, len(chunks), HISTORY_IDS_PER_ENTRY):
        part = chunks[start:start + HISTORY_IDS_PER_ENTRY]
        entries.append({
            "entry_id": uuid.uuid4().hex, "record_id": single.id if single else (group or "bulk"),
            "record_ids": [c.id for c in part], "user_id": "*", "action": action, "actor": actor,
            "reason": reason,
            "before": None,  # a removal erases the text: its entry keeps none
            "after": single.text if single and action == "add" else None,
            "at": now.isoformat(), "at_ts": now.timestamp(), "version": 1 if action == "add" else 2,
            "details": {"chunks": len(chunks), "sources": sources[:50], "group": group},
        })
    return entries

"""Translation between a MemoryRecord and the flat metadata Chroma can hold.

Chroma metadata takes scalars and non-empty homogeneous lists, rejects None on add, and treats
None on update as "delete this key". Times are stored as UTC epoch seconds so they can be compared
in `where` filters. "Never expires" is a far-future sentinel, so the expiry filter is one `$gt`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .records import MemoryRecord
from .scopes import ancestors

NEVER = 253402300799.0  # 9999-12-31T23:59:59Z
USER_META_PREFIX = "x."
_LIST_FIELDS = ("categories", "links")
_OPTIONAL_TEXT = ("topic", "session_id", "invalidated_by", "invalid_reason", "supersedes", "source")


def to_ts(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def from_ts(value: Any) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(float(value), tz=timezone.utc)


def to_metadata(record: MemoryRecord, *, for_update: bool = False) -> dict[str, Any]:
    """Chroma metadata for a record. With `for_update`, absent optional keys are sent as None so
    that Chroma removes a value that was cleared (e.g. an expiry that was lifted)."""
    meta: dict[str, Any] = {
        "user_id": record.user_id,
        "namespace": record.namespace,
        "kind": record.kind,
        "scope": record.scope,
        "scope_path": ancestors(record.scope),
        "importance": float(record.importance),
        "author": record.author,
        "source_kind": record.source_kind,
        "state": record.state,
        "hash": record.hash,
        "private": bool(record.private),
        "created_at": to_ts(record.created_at),
        "updated_at": to_ts(record.updated_at),
        "expires_at": to_ts(record.expires_at) if record.expires_at is not None else NEVER,
        "version": int(record.version),
    }
    if record.turn is not None:
        meta["turn"] = int(record.turn)
    elif for_update:
        meta["turn"] = None
    if record.last_accessed_at is not None:
        meta["last_accessed_at"] = to_ts(record.last_accessed_at)
    for name in _OPTIONAL_TEXT:
        value = getattr(record, name)
        if value is not None:
            meta[name] = value
        elif for_update:
            meta[name] = None
    for name in _LIST_FIELDS:
        values = list(getattr(record, name))
        if values:
            meta[name] = values
        elif for_update:
            meta[name] = None
    for key, value in record.metadata.items():
        meta[USER_META_PREFIX + key] = value
    return meta


def from_metadata(record_id: str, document: str, meta: dict[str, Any]) -> MemoryRecord:
    expires = meta.get("expires_at")
    return MemoryRecord(
        id=record_id,
        text=document,
        hash=str(meta.get("hash", "")),
        kind=meta.get("kind", "fact"),
        user_id=str(meta["user_id"]),
        namespace=str(meta.get("namespace", "default")),
        scope=str(meta.get("scope", "/")),
        categories=list(meta.get("categories") or []),
        topic=meta.get("topic"),
        importance=float(meta.get("importance", 0.5)),
        author=meta.get("author", "user"),
        source_kind=meta.get("source_kind", "conversation"),
        session_id=meta.get("session_id"),
        turn=int(meta["turn"]) if meta.get("turn") is not None else None,
        state=meta.get("state", "valid"),
        invalidated_by=meta.get("invalidated_by"),
        invalid_reason=meta.get("invalid_reason"),
        supersedes=meta.get("supersedes"),
        created_at=from_ts(meta.get("created_at")) or datetime.now(timezone.utc),
        updated_at=from_ts(meta.get("updated_at")) or datetime.now(timezone.utc),
        last_accessed_at=from_ts(meta.get("last_accessed_at")),
        expires_at=None if expires is None or float(expires) >= NEVER else from_ts(expires),
        private=bool(meta.get("private", False)),
        source=meta.get("source"),
        links=list(meta.get("links") or []),
        metadata={k[len(USER_META_PREFIX):]: v for k, v in meta.items() if k.startswith(USER_META_PREFIX)},
        version=int(meta.get("version", 1)),
    )

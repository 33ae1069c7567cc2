"""Translation between a MemoryRecord and the metadata Chroma holds for it.

Chroma stores every metadata key of a record as a row of its own and reads them all back with the
record: with each field as a key (~20), reading 20 records cost ~5 ms against ~1.5 ms with one key
(bench/bench_record_metadata.py). So a record is one JSON key, `record`, plus the few keys
that `where` filters read: kind, scope_path (every ancestor scope, for `$contains`) and updated_at.

Records written by an older mnemic, with every field a key of its own, are read the same way and
take the compact form when they next change (their old keys are then removed: Chroma treats None
on update as "delete this key"). Times are UTC epoch seconds; "never expires" is a far-future
sentinel.
"""

from __future__ import annotations

import json
import logging
import math
from datetime import datetime, timedelta, timezone
from typing import Any

from .records import MemoryRecord
from .scopes import ancestors

log = logging.getLogger("mnemic")

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Older versions stored any created_at a caller gave, even one past the year 9999 once in UTC,
# and every read of that user (erasure too) failed on it. Such a time is read as the nearest of
# these, a day inside datetime's ends so that showing it in any time zone stays in range.
_EARLIEST_READABLE = datetime(1, 1, 2, tzinfo=timezone.utc)
_LATEST_READABLE = datetime(9999, 12, 30, tzinfo=timezone.utc)
NEVER = 253402300799.0  # 9999-12-31T23:59:59Z
USER_META_PREFIX = "x."
RECORD_FIELD = "record"
FILTER_FIELDS = ("kind", "scope_path", "updated_at")
_LIST_FIELDS = ("categories", "links", "also_supersedes")
_OPTIONAL_TEXT = ("topic", "session_id", "invalidated_by", "invalid_reason", "supersedes", "source")
# The keys of the one-key-per-field form, removed from a record when it is rewritten.
_SPREAD_FIELDS = ("user_id", "namespace", "scope", "importance", "author", "source_kind", "state", "hash",
                  "private", "created_at", "expires_at", "version", "turn", "last_accessed_at",
                  *_OPTIONAL_TEXT, *_LIST_FIELDS)


def to_ts(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def from_ts(value: Any) -> datetime | None:
    if value is None:
        return None
    seconds = float(value)
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        # Past datetime's range, or before 1970 on a platform whose C library refuses that.
        try:
            moment = _EPOCH + timedelta(seconds=seconds)
        except (OverflowError, ValueError):
            moment = None
    if moment is not None and _EARLIEST_READABLE <= moment <= _LATEST_READABLE:
        return moment
    if math.isnan(seconds):
        log.warning("a stored time is not a number; it is read as unknown")
        return None
    nearest = _EARLIEST_READABLE if seconds < 0 else _LATEST_READABLE
    log.warning("a stored time (%r epoch seconds) is outside the dates mnemic can work with; read as %s",
                seconds, nearest.isoformat())
    return nearest


def to_metadata(record: MemoryRecord, *, for_update: bool = False) -> dict[str, Any]:
    """Chroma metadata for a record. With `for_update` (the record exists and Chroma merges what
    is sent into what it holds), the keys of the older one-key-per-field form are sent as None."""
    fields = _fields(record)
    meta: dict[str, Any] = {name: fields[name] for name in FILTER_FIELDS}
    meta[RECORD_FIELD] = json.dumps({k: v for k, v in fields.items() if k != "scope_path"},
                                    separators=(",", ":"), ensure_ascii=False)
    if for_update:
        meta.update(dict.fromkeys(_SPREAD_FIELDS))
        meta.update(dict.fromkeys(USER_META_PREFIX + key for key in record.metadata))
    return meta


def _fields(record: MemoryRecord) -> dict[str, Any]:
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
    if record.last_accessed_at is not None:
        meta["last_accessed_at"] = to_ts(record.last_accessed_at)
    for name in _OPTIONAL_TEXT:
        value = getattr(record, name)
        if value is not None:
            meta[name] = value
    for name in _LIST_FIELDS:
        values = list(getattr(record, name))
        if values:
            meta[name] = values
    for key, value in record.metadata.items():
        meta[USER_META_PREFIX + key] = value
    return meta


def from_metadata(record_id: str, document: str, stored: dict[str, Any]) -> MemoryRecord:
    packed = stored.get(RECORD_FIELD)
    meta = json.loads(packed) if isinstance(packed, str) else stored
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
        also_supersedes=list(meta.get("also_supersedes") or []),
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

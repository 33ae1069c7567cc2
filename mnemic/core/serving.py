"""Reading a namespace's records: recall, profile, get, list, history, and the check that serves them.

Every read first waits for the writes queued before it (a recall sees what was just remembered),
then reads from Chroma itself; `may_serve` is the last word on what reaches a caller, checked on
data read back from Chroma (owner, state, expiry, scope, privacy), so a stale lexical entry can
cost a candidate but never serve a wrong record.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from .history import HistoryEntry, applied_entries
from .lexical import LexicalIndex
from .lexical_sync import LexicalSync
from .policy import format_profile
from .recall import RecallPipeline, RecallRequest
from .record_writer import RecordWriter
from .records import KINDS, MemoryMatch, MemoryRecord, utcnow
from .scopes import ROOT, is_within, normalise_scope
from .store import ChromaStore
from .validation import (
    MAX_SOURCE_CHARS,
    check_categories,
    check_flag,
    check_ids,
    check_kinds,
    check_limit,
    check_min_score,
    check_optional_str,
    check_text,
    check_user_id,
    scope_paths,
)
from .writer import BackgroundWriter

# Reads that walk a user's records (profile, the organisation views) look at up to this many.
WALK_LIMIT = 100_000
# What a recall serves when the caller names no kinds. Lessons (what reviewers taught a flow step)
# are read only by the lesson store, which asks for them by name: they never reach an ordinary
# recall, whatever a caller forgets to filter.
DEFAULT_RECALL_KINDS = tuple(kind for kind in KINDS if kind != "lesson")


def scopes_of(scope: str | Sequence[str] | None) -> list[str]:
    """A scope argument (one path, several, or none for the whole namespace) as normalised paths."""
    if scope is None:
        return [ROOT]
    return [normalise_scope(path) for path in scope_paths(scope)] or [ROOT]


def scope_where(scopes: list[str]) -> dict[str, Any] | None:
    """A Chroma filter that narrows a user's records to `scopes` (None: the whole collection)."""
    clauses = [{"scope_path": {"$contains": s}} for s in scopes if s != ROOT]
    if ROOT in scopes or not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def may_serve(record: MemoryRecord, *, owner: str, scopes: list[str], categories: list[str],
              kinds: list[str], source: str | None, now: datetime) -> bool:
    """The last word on serving a record, checked on data read back from Chroma."""
    if record.user_id != owner or not record.is_servable(now):
        return False
    if not any(is_within(record.scope, s) for s in scopes):
        return False
    if categories and not set(categories) & set(record.categories):
        return False
    if kinds and record.kind not in kinds:
        return False
    # A private record is only served back to the source that wrote it (CrewAI's semantics).
    return not (record.private and record.source != source)


class RecordReader:
    def __init__(self, *, namespace: str, store: ChromaStore, lexical: LexicalIndex, records: RecordWriter,
                 writer: BackgroundWriter, recall: RecallPipeline, sync: LexicalSync,
                 owner: Callable[[Any], str], max_text_chars: int) -> None:
        self._namespace = namespace
        self._store = store
        self._lexical = lexical
        self._records = records
        self._writer = writer
        self._recall = recall
        self._sync = sync
        self._owner = owner
        self._max_text_chars = max_text_chars

    def recall(self, query: str, *, user_id: str | None, limit: int, scope: str | Sequence[str] | None,
               categories: Sequence[str] | None, kinds: Sequence[str] | None, source: str | None,
               min_score: float) -> list[MemoryMatch]:
        query_text = check_text(query, name="query", max_chars=self._max_text_chars)
        min_score = check_min_score(min_score)
        owner = self._owner(user_id)
        limit = check_limit(limit)
        scopes = scopes_of(scope)
        cats = check_categories(categories)
        kind_list = check_kinds(kinds) or list(DEFAULT_RECALL_KINDS)
        source = check_optional_str(source, name="source", max_chars=MAX_SOURCE_CHARS)
        self._writer.drain()
        self._sync.maybe_sync(owner)
        now = utcnow()

        def servable(record: MemoryRecord) -> bool:
            return may_serve(record, owner=owner, scopes=scopes, categories=cats, kinds=kind_list,
                             source=source, now=now)

        return self._recall.run(RecallRequest(
            query=query_text, owner=owner, limit=limit, min_score=min_score, now=now, servable=servable,
        ))

    def profile(self, user_id: str | None, *, limit: int, scope: str | Sequence[str] | None,
                source: str | None) -> str:
        owner = self._owner(user_id)
        limit = check_limit(limit, maximum=200)
        scopes = scopes_of(scope)
        source = check_optional_str(source, name="source", max_chars=MAX_SOURCE_CHARS)
        now = utcnow()
        chosen: list[MemoryRecord] = []
        for record in self.list(user_id=owner, scope=scopes, include_pending=False, kinds=["fact", "note"],
                                limit=WALK_LIMIT):
            if may_serve(record, owner=owner, scopes=scopes, categories=[], kinds=[], source=source, now=now):
                chosen.append(record)
                if len(chosen) >= limit:
                    break
        return format_profile(chosen)

    def get(self, record_id: str) -> MemoryRecord:
        (record_id,) = check_ids([record_id])
        self._writer.drain()
        return self.current(record_id)

    def current(self, record_id: str) -> MemoryRecord:
        """A record as stored now, without waiting for queued writes: for a change that drained
        before it took the record lock (see RecordLock). KeyError if unknown."""
        (record_id,) = check_ids([record_id])
        found = self.locate(record_id)
        if found is None:
            raise KeyError(f"no memory with id {record_id!r} in namespace {self._namespace!r}")
        return found

    def locate(self, record_id: str) -> MemoryRecord | None:
        """A record by id in whichever user's collection holds it, or None."""
        for hint in self._lexical.collections_of(record_id):
            row = self._store.get_in(hint, record_id)  # None for another namespace's collection
            if row is not None:
                return self._records.decode(row)
        for user_id in self._store.users():
            rows = self._store.get(user_id, ids=[record_id])
            if rows:
                return self._records.decode(rows[0])
        return None

    def list(self, *, user_id: str | None = None, scope: str | Sequence[str] | None = None,
             include_invalid: bool = False, include_pending: bool = True, include_expired: bool = False,
             kinds: Sequence[str] | None = None, limit: int = 100, offset: int = 0) -> builtins.list[MemoryRecord]:
        limit = check_limit(limit, maximum=WALK_LIMIT)
        include_invalid = check_flag(include_invalid, name="include_invalid")
        include_pending = check_flag(include_pending, name="include_pending")
        include_expired = check_flag(include_expired, name="include_expired")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        scopes = scopes_of(scope)
        kind_list = check_kinds(kinds)
        self._writer.drain()
        users = [check_user_id(user_id)] if user_id is not None else self._store.users()
        now = utcnow()
        records = []
        for owner in users:
            for row in self._store.iterate(owner, where=scope_where(scopes)):
                record = self._records.decode(row)
                if record.user_id != owner or not any(is_within(record.scope, s) for s in scopes):
                    continue
                if record.state == "invalid" and not include_invalid:
                    continue
                if record.state == "pending" and not include_pending:
                    continue
                if record.is_expired(now) and not include_expired:
                    continue
                if kind_list and record.kind not in kind_list:
                    continue
                records.append(record)
        records.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return records[offset:offset + limit]

    def revision(self, user_id: str) -> tuple[int, float | None]:
        owner = check_user_id(user_id)
        return self._store.count(owner), self._lexical.watermark(self._store.collection_name(owner))

    def history(self, record_id: str) -> builtins.list[HistoryEntry]:
        (record_id,) = check_ids([record_id])
        self._writer.drain()
        raw = self._records.history.for_record(record_id)
        if not raw:
            if self.locate(record_id) is not None:
                # Every write adds an entry: the trail that held this record's was lost.
                raise KeyError(
                    f"memory {record_id!r} exists in namespace {self._namespace!r} but has no audit trail: the "
                    f"trail that held its entries was lost after the record was written (in an embedded store, "
                    f"the local database lexical.sqlite3 was deleted, emptied or replaced; a warning was logged "
                    f"when the store was opened). "
                    f"What changed it before then is not known; get() still reads the record, and its changes "
                    f"from now on are recorded.")
            raise KeyError(f"no memory with id {record_id!r} has any history in namespace {self._namespace!r}")
        current = self.locate(record_id)
        applied = applied_entries(raw, current.version if current is not None else None)
        if not applied:
            raise KeyError(f"no memory with id {record_id!r} in namespace {self._namespace!r}")
        return applied

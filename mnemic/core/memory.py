"""`Memory`: per-user facts with provenance, lifecycle, hybrid recall and an audit trail, on Chroma.

Write order, everywhere: history entry → Chroma record → lexical index. Chroma is the truth; the
history entry names the version it produces (so a crash before the record lands leaves an entry
that `history()` knows was never applied), and the lexical index is a cache repaired on open.
Every read re-checks ownership, state and expiry on records fetched from Chroma itself.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from .codec import NEVER, from_metadata, to_metadata
from .embeddings import Embedder, resolve_embedder
from .history import HistoryEntry, applied_entries, entry
from .lexical import LexicalIndex, matched_terms
from .lock import acquire_store_lock
from .ranking import Candidate, RecallWeights, fuse
from .records import (
    AUTHORS,
    KINDS,
    SOURCE_KINDS,
    UNCONFIRMED_SOURCE_KINDS,
    MemoryMatch,
    MemoryRecord,
    text_hash,
    utcnow,
)
from .scopes import ROOT, ancestors, is_within, normalise_scope
from .store import ChromaStore, StoredRow, make_persistent_client, owner_key
from .validation import (
    MAX_TEXT_CHARS,
    check_categories,
    check_choice,
    check_ids,
    check_importance,
    check_limit,
    check_metadata,
    check_older_than,
    check_optional_str,
    check_text,
    check_ttl,
    check_turn,
    check_user_id,
)

log = logging.getLogger("mnemic")

_UNSET: Any = object()
SERVER_SYNC_INTERVAL_S = 2.0


class Memory:
    """Long-term memory for agents. See the README for a tour.

    `Memory("./.mnemic")` opens (or creates) an embedded store; `Memory(client=chromadb.HttpClient(...))`
    uses a Chroma server; `Memory()` is a private temporary store removed on `close()`.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        namespace: str = "default",
        client: Any = None,
        embedder: Any = None,
        llm: Any = None,
        policy: Any = None,
        weights: RecallWeights | None = None,
        lexical_path: str | Path | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
    ) -> None:
        if path is not None and client is not None:
            raise ValueError("give either path (embedded Chroma) or client (e.g. chromadb.HttpClient), not both")
        if not isinstance(namespace, str) or not namespace.strip():
            raise ValueError("namespace must be a non-empty string, e.g. the agent's name")
        self.namespace = namespace.strip()
        self._temporary: Path | None = None
        self._lock_handle = None
        if client is None:
            if path is None:
                self._temporary = Path(tempfile.mkdtemp(prefix="mnemic-"))
                path = self._temporary
            self.path: Path | None = Path(path).expanduser().resolve()
            self._lock_handle = acquire_store_lock(self.path)
            try:
                client = make_persistent_client(self.path / "chroma")
            except BaseException:
                self._lock_handle.release()
                raise
            lexical_file: Path | None = self.path / "lexical.sqlite3"
            self.mode = "embedded"
        else:
            self.path = None
            lexical_file = Path(lexical_path) if lexical_path is not None else None
            self.mode = "client"
        self.embedder: Embedder = resolve_embedder(embedder)
        self.llm = llm
        self.policy = policy
        self.weights = weights or RecallWeights()
        self.max_text_chars = max_text_chars
        self.anonymous_user_id = f"anonymous:{uuid.uuid4().hex}"
        self._store = ChromaStore(client, self.namespace)
        self._store.check_embedder(self.embedder.name, int(self.embedder.dimension))
        self._lexical = LexicalIndex(lexical_file)
        self._write_lock = threading.RLock()
        self._last_sync: dict[str, float] = {}
        self._closed = False
        from .writer import BackgroundWriter

        self._writer = BackgroundWriter()
        self.repair()

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Finish queued writes and release the store (and its process lock)."""
        if self._closed:
            return
        self._writer.close()
        self._lexical.close()
        self._closed = True
        if self._lock_handle is not None:
            self._lock_handle.release()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)

    def drain_writes(self, timeout: float | None = None) -> None:
        """Wait for every write queued by `remember_many` so far (a read barrier)."""
        self._writer.drain(timeout)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Memory is closed; open a new one")

    def _user(self, user_id: Any) -> str:
        if user_id is None:
            # Anonymous callers get an id bound to this Memory object's session, never a shared one.
            return self.anonymous_user_id
        return check_user_id(user_id)

    # -- writing ----------------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        user_id: str | None,
        scope: str | None = None,
        categories: Sequence[str] | None = None,
        importance: float | None = None,
        author: str = "user",
        source_kind: str = "conversation",
        session_id: str | None = None,
        turn: int | None = None,
        private: bool = False,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        ttl_seconds: float | None = None,
        kind: str = "fact",
        created_at: datetime | None = None,
        actor: str | None = None,
    ) -> MemoryRecord | None:
        """Store one fact for `user_id` and return it (or the existing record it duplicates)."""
        self._check_open()
        prepared = self._prepare(
            [text], user_id=user_id, scope=scope, categories=categories, importance=importance,
            author=author, source_kind=source_kind, session_id=session_id, turn=turn, private=private,
            source=source, metadata=metadata, ttl_seconds=ttl_seconds, kind=kind, created_at=created_at,
        )
        self.drain_writes()
        stored = self._persist_new(prepared, actor=actor or author)
        return stored[0] if stored else None

    def remember_many(self, texts: Iterable[str], **options: Any) -> list[str]:
        """Queue facts for the background writer and return at once.

        Input is checked now (bad input raises here, nothing is queued); the write happens in the
        background. Returns the ids the new records will have.
        """
        self._check_open()
        items = list(texts) if not isinstance(texts, str) else [texts]
        if not items:
            return []
        actor = options.pop("actor", None)
        prepared = self._prepare(items, **options)
        self._writer.submit(lambda: self._persist_new(prepared, actor=actor or prepared[0].author))
        return [r.id for r in prepared]

    def _prepare(
        self,
        texts: Sequence[Any],
        *,
        user_id: Any,
        scope: Any = None,
        categories: Any = None,
        importance: Any = None,
        author: Any = "user",
        source_kind: Any = "conversation",
        session_id: Any = None,
        turn: Any = None,
        private: Any = False,
        source: Any = None,
        metadata: Any = None,
        ttl_seconds: Any = None,
        kind: Any = "fact",
        created_at: datetime | None = None,
    ) -> list[MemoryRecord]:
        owner = self._user(user_id)
        clean_texts = [check_text(t, max_chars=self.max_text_chars) for t in texts]
        scope_path = normalise_scope(scope)
        cats = check_categories(categories)
        weight = check_importance(importance)
        check_choice(author, name="author", choices=AUTHORS)
        check_choice(source_kind, name="source_kind", choices=SOURCE_KINDS)
        check_choice(kind, name="kind", choices=KINDS)
        session = check_optional_str(session_id, name="session_id")
        turn_no = check_turn(turn)
        if not isinstance(private, bool):
            raise TypeError(f"private must be True or False, got {type(private).__name__}")
        origin = check_optional_str(source, name="source")
        extra = check_metadata(metadata)
        ttl = check_ttl(ttl_seconds)
        now = utcnow()
        born = created_at or now
        state = "pending" if source_kind in UNCONFIRMED_SOURCE_KINDS else "valid"
        return [
            MemoryRecord(
                id=uuid.uuid4().hex, text=t, hash=text_hash(t), kind=kind, user_id=owner,
                namespace=self.namespace, scope=scope_path, categories=cats, importance=weight,
                author=author, source_kind=source_kind, session_id=session, turn=turn_no, state=state,
                created_at=born, updated_at=now, expires_at=now + timedelta(seconds=ttl) if ttl else None,
                private=private, source=origin, metadata=extra,
            )
            for t in clean_texts
        ]

    def _persist_new(self, records: list[MemoryRecord], *, actor: str) -> list[MemoryRecord]:
        """Write new records, merging exact duplicates of what the user already has."""
        if not records:
            return []
        user_id = records[0].user_id
        with self._write_lock:
            fresh: list[MemoryRecord] = []
            result: list[MemoryRecord] = []
            known: dict[str, MemoryRecord] = {}
            rank = {"valid": 0, "pending": 1, "invalid": 2}
            for existing in self._find_by_hash(user_id, {r.hash for r in records}):
                current = known.get(existing.hash)
                if current is None or rank[existing.state] < rank[current.state]:
                    known[existing.hash] = existing
            in_batch: dict[str, MemoryRecord] = {}
            for record in records:
                if record.hash in in_batch:
                    result.append(in_batch[record.hash])
                    continue
                twin = known.get(record.hash)
                if twin is not None and twin.scope == record.scope and twin.kind == record.kind:
                    merged = self._merge_duplicate(twin, record, actor=actor)
                    if merged is not None:
                        result.append(merged)
                        in_batch[record.hash] = merged
                        continue
                in_batch[record.hash] = record
                fresh.append(record)
                result.append(record)
            if fresh:
                vectors = self.embedder.embed([r.text for r in fresh])
                self._store.add_history([
                    entry("add", record=r, actor=actor, before=None, after=r, version=r.version,
                          details={"source_kind": r.source_kind, "author": r.author})
                    for r in fresh
                ])
                self._store.add(user_id, [
                    StoredRow(id=r.id, document=r.text, metadata=to_metadata(r), embedding=v)
                    for r, v in zip(fresh, vectors, strict=True)
                ])
                self._index(fresh)
            return result

    def _merge_duplicate(self, twin: MemoryRecord, incoming: MemoryRecord, *, actor: str) -> MemoryRecord | None:
        """The same statement again. Returns the record that stands for it, or None when the
        incoming statement must be stored as a record of its own."""
        if twin.state == "invalid":
            return None  # said again after it was invalidated: a new fact, not a revival
        if twin.state == "pending" and incoming.state == "valid":
            return None  # the user said what a tool claimed: that provenance deserves its own record
        if twin.state == "valid" and incoming.state == "pending":
            return twin  # a tool repeating a known fact adds nothing
        expires = None if twin.expires_at is None or incoming.expires_at is None else max(
            twin.expires_at, incoming.expires_at)
        updated = twin.model_copy(update={
            "categories": list(dict.fromkeys([*twin.categories, *incoming.categories])),
            "importance": max(twin.importance, incoming.importance),
            "updated_at": utcnow(),
            "expires_at": expires,
            "version": twin.version + 1,
        })
        self._write_update(twin, updated, action="merge", actor=actor,
                           reason="the same statement was remembered again", reembed=False)
        return updated

    def _find_by_hash(self, user_id: str, hashes: set[str]) -> list[MemoryRecord]:
        if not hashes:
            return []
        where = {"hash": next(iter(hashes))} if len(hashes) == 1 else {"hash": {"$in": sorted(hashes)}}
        return [self._record(row) for row in self._store.get(user_id, where=where)]

    def _index(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        user_id = records[0].user_id
        collection = self._store.collection_name(user_id)
        self._lexical.upsert((r.id, collection, r.user_id, r.text, r.version) for r in records)
        self._lexical.set_watermark(collection, max(r.updated_at.timestamp() for r in records))

    def _write_update(
        self,
        before: MemoryRecord,
        after: MemoryRecord,
        *,
        action: Any,
        actor: str,
        reason: str | None,
        reembed: bool,
    ) -> None:
        self._store.add_history([entry(action, record=after, actor=actor, before=before, after=after,
                                       reason=reason, version=after.version)])
        vector = self.embedder.embed([after.text])[0] if reembed else None
        self._store.replace_metadata(after.user_id, [
            StoredRow(after.id, after.text, to_metadata(after, for_update=True), vector)
        ])
        self._index([after])

    # -- reading ----------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        user_id: str | None,
        limit: int = 10,
        scope: str | Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        source: str | None = None,
        min_score: float = 0.0,
    ) -> list[MemoryMatch]:
        """The user's servable facts most relevant to `query`, best first, each explained."""
        self._check_open()
        query_text = check_text(query, name="query", max_chars=self.max_text_chars)
        owner = self._user(user_id)
        limit = check_limit(limit)
        scopes = self._scopes(scope)
        cats = check_categories(categories)
        kind_list = [check_choice(k, name="kinds", choices=KINDS) for k in (kinds or [])]
        self.drain_writes()
        self._maybe_sync(owner)
        now = utcnow()
        pool = max(limit * 4, 40)

        vector = self.embedder.embed([query_text])[0]

        def servable(record: MemoryRecord) -> bool:
            return self._may_serve(record, owner=owner, scopes=scopes, categories=cats, kinds=kind_list,
                                   source=source, now=now)

        # No `where` here: Chroma evaluates a metadata filter against every record in the database,
        # not just this user's collection (~100 ms at 100k records). Over-fetch and filter instead,
        # widening only when invalid, pending or out-of-scope records crowd the top.
        candidates: dict[str, Candidate] = {}
        fetch = pool
        while True:
            rows = self._store.query(owner, vector, n_results=fetch)
            candidates = {}
            for row in rows:
                record = self._record(row)
                if servable(record):
                    candidates[record.id] = Candidate(record=record, cosine=1.0 - float(row.distance or 0.0))
            if len(candidates) >= pool or len(rows) < fetch or fetch >= 20 * pool:
                break
            fetch *= 4

        hits = self._lexical.search(query_text, user_id=owner, limit=pool)
        missing = [h.record_id for h in hits if h.record_id not in candidates]
        if missing:
            rows = self._store.get(owner, ids=missing, embeddings=True)
            found = {row.id for row in rows}
            stale = [rid for rid in missing if rid not in found]
            if stale:
                self._lexical.delete(stale)
            for row in rows:
                record = self._record(row)
                cosine = float(np.dot(row.embedding, vector)) if row.embedding is not None else None
                candidates[record.id] = Candidate(record=record, cosine=cosine)
        for hit in hits:
            if hit.record_id in candidates:
                candidates[hit.record_id].bm25 = hit.bm25

        admitted = [c for c in candidates.values() if servable(c.record)]
        for candidate in admitted:
            if candidate.bm25 is not None:
                candidate.matched_terms = matched_terms(query_text, candidate.record.text)
        matches = []
        seen_hashes: set[str] = set()
        for score, candidate, breakdown in fuse(admitted, self.weights, now):
            if score < min_score or candidate.record.hash in seen_hashes:
                continue
            seen_hashes.add(candidate.record.hash)
            matches.append(MemoryMatch(record=candidate.record, score=round(score, 6), breakdown=breakdown))
            if len(matches) >= limit:
                break
        return matches

    def _scopes(self, scope: str | Sequence[str] | None) -> list[str]:
        if scope is None:
            return [ROOT]
        if isinstance(scope, str):
            return [normalise_scope(scope)]
        return [normalise_scope(s) for s in scope] or [ROOT]

    @staticmethod
    def _may_serve(record: MemoryRecord, *, owner: str, scopes: list[str], categories: list[str],
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

    def _record(self, row: StoredRow) -> MemoryRecord:
        return from_metadata(row.id, row.document, row.metadata)

    def get(self, record_id: str) -> MemoryRecord:
        """A record by id, whatever its state (an operator call). Raises KeyError if unknown."""
        self._check_open()
        (record_id,) = check_ids([record_id])
        self.drain_writes()
        found = self._locate(record_id)
        if found is None:
            raise KeyError(f"no memory with id {record_id!r} in namespace {self.namespace!r}")
        return found

    def _locate(self, record_id: str) -> MemoryRecord | None:
        hint = self._lexical.collection_of(record_id)
        if hint is not None:
            row = self._store.get_in(hint, record_id)
            if row is not None:
                return self._record(row)
        for user_id in self._store.users():
            rows = self._store.get(user_id, ids=[record_id])
            if rows:
                return self._record(rows[0])
        return None

    def list(
        self,
        *,
        user_id: str | None = None,
        scope: str | Sequence[str] | None = None,
        include_invalid: bool = False,
        include_pending: bool = True,
        include_expired: bool = False,
        kinds: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """Records newest first. With no user_id this is the operator's view across users."""
        self._check_open()
        limit = check_limit(limit, maximum=100_000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        scopes = self._scopes(scope)
        kind_list = [check_choice(k, name="kinds", choices=KINDS) for k in (kinds or [])]
        self.drain_writes()
        users = [check_user_id(user_id)] if user_id is not None else self._store.users()
        now = utcnow()
        records = []
        for owner in users:
            for row in self._store.iterate(owner, where=self._list_where(scopes)):
                record = self._record(row)
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

    @staticmethod
    def _list_where(scopes: list[str]) -> dict[str, Any] | None:
        clauses = [{"scope_path": {"$contains": s}} for s in scopes if s != ROOT]
        if ROOT in scopes or not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$or": clauses}

    def history(self, record_id: str) -> list[HistoryEntry]:
        """Every landed mutation of a record, oldest first (also after it was deleted)."""
        self._check_open()
        (record_id,) = check_ids([record_id])
        self.drain_writes()
        raw = self._store.history_for(record_id)
        if not raw:
            raise KeyError(f"no memory with id {record_id!r} has any history in namespace {self.namespace!r}")
        current = self._locate(record_id)
        return applied_entries(raw, current.version if current is not None else None)

    # -- changing ---------------------------------------------------------------------------------

    def update(
        self,
        record_id: str,
        *,
        text: str | None = None,
        scope: str | None = None,
        categories: Sequence[str] | None = None,
        importance: float | None = None,
        private: bool | None = None,
        source: Any = _UNSET,
        metadata: dict[str, Any] | None = None,
        ttl_seconds: float | None = None,
        actor: str = "operator",
        reason: str | None = None,
    ) -> MemoryRecord:
        """Change what is given and keep everything else (source, privacy, provenance)."""
        self._check_open()
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = check_text(text, max_chars=self.max_text_chars)
            changes["hash"] = text_hash(changes["text"])
        if scope is not None:
            changes["scope"] = normalise_scope(scope)
        if categories is not None:
            changes["categories"] = check_categories(categories)
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if private is not None:
            if not isinstance(private, bool):
                raise TypeError("private must be True or False")
            changes["private"] = private
        if source is not _UNSET:
            changes["source"] = check_optional_str(source, name="source")
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        if ttl_seconds is not None:
            ttl = check_ttl(ttl_seconds)
            changes["expires_at"] = utcnow() + timedelta(seconds=ttl) if ttl else None
        if not changes:
            raise ValueError("update() needs at least one field to change (text, scope, categories, ...)")
        with self._write_lock:
            before = self.get(record_id)
            after = before.model_copy(update={**changes, "updated_at": utcnow(), "version": before.version + 1})
            after = MemoryRecord.model_validate(after.model_dump())
            self._write_update(before, after, action="update", actor=actor, reason=reason,
                               reembed="text" in changes and changes["text"] != before.text)
            return after

    def invalidate(self, record_id: str, *, reason: str, actor: str = "operator",
                   replaced_by: str | None = None) -> MemoryRecord:
        """Mark a fact no longer true: kept with its history, never served again."""
        self._check_open()
        reason_text = check_text(reason, name="reason", max_chars=2000)
        with self._write_lock:
            before = self.get(record_id)
            if replaced_by is not None:
                self.get(replaced_by)
            after = before.model_copy(update={
                "state": "invalid", "invalid_reason": reason_text, "invalidated_by": replaced_by,
                "updated_at": utcnow(), "version": before.version + 1,
            })
            self._write_update(before, after, action="invalidate", actor=actor, reason=reason_text,
                               reembed=False)
            return after

    def confirm(self, record_id: str, *, actor: str = "operator") -> MemoryRecord:
        """Let a pending fact (from a tool result or document) be served."""
        self._check_open()
        with self._write_lock:
            before = self.get(record_id)
            if before.state == "invalid":
                raise ValueError(f"memory {record_id} is invalid ({before.invalid_reason}); it cannot be confirmed")
            if before.state == "valid":
                return before
            after = before.model_copy(update={"state": "valid", "updated_at": utcnow(),
                                              "version": before.version + 1})
            self._write_update(before, after, action="confirm", actor=actor, reason=None, reembed=False)
            return after

    def delete(self, record_id: str, *, actor: str = "operator", reason: str | None = None) -> None:
        """Remove a record for good; its history keeps a tombstone."""
        self._check_open()
        with self._write_lock:
            record = self.get(record_id)
            self._store.add_history([entry("delete", record=record, actor=actor, before=record, after=None,
                                           reason=reason, version=record.version + 1)])
            self._store.delete(record.user_id, [record.id])
            self._lexical.delete([record.id])

    def forget(
        self,
        *,
        user_id: str | None = None,
        scope: str | None = None,
        categories: Sequence[str] | None = None,
        older_than: Any = None,
        ids: Sequence[str] | None = None,
        actor: str = "operator",
    ) -> int:
        """Erase every record matching all the given criteria; returns how many were erased.

        Erasure removes the text from the audit trail too: what remains is that a record was
        erased, when and by whom.
        """
        self._check_open()
        if user_id is None and scope is None and not categories and older_than is None and ids is None:
            raise ValueError(
                "forget() needs at least one criterion (user_id, scope, categories, older_than or ids); "
                "use reset() to empty the whole namespace"
            )
        owner = check_user_id(user_id) if user_id is not None else None
        scopes = self._scopes(scope)
        cats = check_categories(categories)
        cutoff = check_older_than(older_than)
        id_set = set(check_ids(ids)) if ids is not None else None
        self.drain_writes()
        users = [owner] if owner is not None else self._store.users()
        erased = 0
        with self._write_lock:
            for who in users:
                doomed = []
                for row in self._store.iterate(who, where=self._list_where(scopes)):
                    record = self._record(row)
                    if id_set is not None and record.id not in id_set:
                        continue
                    if not any(is_within(record.scope, s) for s in scopes):
                        continue
                    if cats and not set(cats) & set(record.categories):
                        continue
                    if cutoff is not None and record.created_at >= cutoff:
                        continue
                    doomed.append(record)
                erased += self._erase(who, doomed, actor=actor)
        return erased

    def _erase(self, user_id: str, records: list[MemoryRecord], *, actor: str) -> int:
        if not records:
            return 0
        ids = [r.id for r in records]
        self._store.delete(user_id, ids)
        self._lexical.delete(ids)
        old_entries = self._store.history_ids_for_records(ids)
        self._store.delete_history(old_entries)
        tombstones = []
        for record in records:
            tomb = entry("forget", record=record, actor=actor, before=None, after=None,
                         reason="erased", version=record.version + 1)
            # The trail keeps that something was erased, not whose it was.
            tomb["user_id"] = "erased:" + owner_key(record.user_id)[:16]
            tombstones.append(tomb)
        self._store.add_history(tombstones)
        return len(records)

    def reset(self) -> None:
        """Empty the whole namespace: every user's records, their history and settings."""
        self._check_open()
        self.drain_writes()
        with self._write_lock:
            for user_id in self._store.users():
                self._lexical.drop_collection(self._store.collection_name(user_id))
            embedder = self._store.get_setting("embedder")
            self._store.drop_namespace()
            if embedder is not None:
                self._store.put_setting("embedder", embedder)

    # -- organisation -----------------------------------------------------------------------------

    def scope(self, path: str) -> MemoryView:
        from .views import MemoryView

        return MemoryView(self, [path], read_only=False)

    def slice(self, paths: Sequence[str], *, read_only: bool = True) -> MemoryView:
        from .views import MemoryView

        if isinstance(paths, str):
            paths = [paths]
        if not paths:
            raise ValueError("slice() needs at least one scope path")
        return MemoryView(self, list(paths), read_only=read_only)

    def list_scopes(self, parent: str = ROOT, *, user_id: str | None = None) -> list[str]:
        """The direct child scopes of `parent` that hold records."""
        base = normalise_scope(parent)
        depth = len(ancestors(base))
        children = set()
        for record in self.list(user_id=user_id, scope=base, include_invalid=True, limit=100_000):
            chain = ancestors(record.scope)
            if len(chain) > depth:
                children.add(chain[depth])
        return sorted(children)

    def list_categories(self, *, user_id: str | None = None, scope: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self.list(user_id=user_id, scope=scope, limit=100_000):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return dict(sorted(counts.items()))

    def tree(self, *, user_id: str | None = None, scope: str | None = None) -> dict[str, Any]:
        """Nested scopes with record counts: {"count": n, "children": {"alpha": {...}}}."""
        base = normalise_scope(scope)
        root: dict[str, Any] = {"count": 0, "children": {}}
        for record in self.list(user_id=user_id, scope=base, include_invalid=True, limit=100_000):
            node = root
            node["count"] += 1
            for part in ancestors(record.scope)[len(ancestors(base)):]:
                name = part.rsplit("/", 1)[-1]
                node = node["children"].setdefault(name, {"count": 0, "children": {}})
                node["count"] += 1
        return root

    def info(self, scope: str | None = None, *, user_id: str | None = None) -> dict[str, Any]:
        records = self.list(user_id=user_id, scope=scope, include_invalid=True, include_expired=True,
                            limit=100_000)
        now = utcnow()
        by_state = {"valid": 0, "pending": 0, "invalid": 0, "expired": 0}
        by_kind: dict[str, int] = {}
        for record in records:
            by_state["expired" if record.is_expired(now) else record.state] += 1
            by_kind[record.kind] = by_kind.get(record.kind, 0) + 1
        return {
            "namespace": self.namespace,
            "scope": normalise_scope(scope),
            "records": len(records),
            "states": by_state,
            "kinds": by_kind,
            "users": len({r.user_id for r in records}),
            "categories": self.list_categories(user_id=user_id, scope=scope),
            "oldest": min((r.created_at for r in records), default=None),
            "newest": max((r.created_at for r in records), default=None),
            "embedder": self.embedder.name,
            "mode": self.mode,
        }

    def users(self) -> list[str]:
        """Every user with records in this namespace (an operator call)."""
        self._check_open()
        self.drain_writes()
        return self._store.users()

    # -- repair -----------------------------------------------------------------------------------

    def repair(self) -> int:
        """Bring the lexical index in line with Chroma (after a crash, or another process's writes).

        Returns how many index entries were added, changed or dropped.
        """
        changed = 0
        for user_id in self._store.users():
            changed += self._sync_user(user_id)
        return changed

    def _maybe_sync(self, user_id: str) -> None:
        if self.mode == "embedded":
            return  # this process is the only writer: the index is current
        now = time.monotonic()
        if now - self._last_sync.get(user_id, 0.0) >= SERVER_SYNC_INTERVAL_S:
            self._last_sync[user_id] = now
            self._sync_user(user_id)

    def _sync_user(self, user_id: str) -> int:
        collection = self._store.collection_name(user_id)
        indexed = self._lexical.versions(collection)
        watermark = self._lexical.watermark(collection)
        count = self._store.count(user_id)
        if watermark is not None and count == len(indexed):
            # Only records written after the watermark can be missing or stale.
            rows = list(self._store.iterate(user_id, where={"updated_at": {"$gte": watermark - 1.0}}))
            todo = [r for r in rows if indexed.get(r.id) != int(r.metadata.get("version", 1))]
            stale_ids: list[str] = []
        else:
            rows = list(self._store.iterate(user_id))
            present = {r.id for r in rows}
            stale_ids = [rid for rid in indexed if rid not in present]
            todo = [r for r in rows if indexed.get(r.id) != int(r.metadata.get("version", 1))]
        if stale_ids:
            self._lexical.delete(stale_ids)
        if todo:
            self._lexical.upsert((r.id, collection, user_id, r.document, int(r.metadata.get("version", 1)))
                                 for r in todo)
        if rows:
            self._lexical.set_watermark(collection, max(float(r.metadata.get("updated_at", 0)) for r in rows))
        elif watermark is None:
            self._lexical.set_watermark(collection, 0.0)
        return len(todo) + len(stale_ids)


# Imported late: views call back into Memory.
from .views import MemoryView  # noqa: E402

__all__ = ["NEVER", "Memory", "MemoryView"]

"""Keyed notes: records an application addresses by its own key and writes as given.

A fact is distilled, deduplicated and reconciled, because the same thing said twice is one fact.
A key-value store (LangGraph's `BaseStore`, say) needs the opposite: `put(key, value)` replaces
exactly what is under that key, two keys holding the same text are two items, and a `get` returns
what was put. Notes give that on top of a `Memory`, as records of kind "note" in the owner's own
collection, so everything mnemic promises for memory holds for them too:

- per-user isolation (each owner's notes live in that owner's collection);
- the memory policy (no writes under `off`; the policy's ttl when the caller gives none);
- safety (a secret is refused, always; sensitive categories when asked to screen them);
- the audit trail (add, update and delete are history entries) and erasure (`Memory.forget`);
- recall and profiles, which serve notes beside facts.

A note's record id is derived from (namespace, owner, key), so a lookup by key is a lookup by id
and never a metadata filter. The caller's JSON payload rides in the record's metadata; the record
text is what gets embedded and keyword-indexed. A note may also carry one vector per index field
(`FieldVectors`): key-value stores score an item by its best-matching field, as LangGraph's stores
do. A note may carry a refreshable ttl: it expires that long after it was last written or read
with `touch`.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .embeddings import Embedder
from .gate import OpenGate
from .lexical import LexicalIndex
from .lexical_sync import LexicalSync
from .namespace_policy import NamespacePolicy
from .ranking import Candidate, RecallWeights, fuse
from .record_writer import RecordWriter
from .records import NOTE_FIELD_VECTORS_KEY, MemoryRecord, text_hash, utcnow
from .safety import secret_fields, sensitive_category
from .scopes import ROOT, normalise_scope
from .stats import WriteStats
from .store import ChromaStore
from .validation import (
    check_items,
    check_name,
    check_new_user_id,
    check_optional_str,
    check_text,
    check_ttl,
    check_user_id,
)

log = logging.getLogger("mnemic.notes")

NOTE_KIND = "note"
KEY_FIELD = "note_key"
DATA_FIELD = "note_data"
INDEXED_FIELD = "note_indexed"
TTL_FIELD = "note_ttl"
FIELDS_FIELD = NOTE_FIELD_VECTORS_KEY
_PAGE = 1000
MAX_KEY_CHARS = 1_000
# A note's data is kept in its record's metadata, as JSON.
MAX_DATA_CHARS = 256_000


class NoteRefusedError(ValueError):
    """A note mnemic will not store (a secret; a sensitive category when screening). Nothing was written."""


@dataclass(frozen=True)
class FieldVectors:
    """The vectors of a note's index fields, one per field text, in the vector space `space`
    (an embedder's name). `count` 0: no index field held text. `matrix` None: the note's own
    record vector is its single field's (same text, same embedder), so it is not stored twice."""

    space: str
    count: int
    matrix: np.ndarray | None = None

    def to_json(self) -> str:
        packed = None
        if self.matrix is not None:
            packed = base64.b64encode(np.ascontiguousarray(self.matrix, dtype=np.float32).tobytes()).decode("ascii")
        dim = int(self.matrix.shape[1]) if self.matrix is not None else 0
        return json.dumps({"space": self.space, "count": self.count, "dim": dim, "vectors": packed})

    @classmethod
    def from_json(cls, raw: Any) -> FieldVectors | None:
        try:
            value = json.loads(raw)
            matrix = None
            if value.get("vectors"):
                flat = np.frombuffer(base64.b64decode(value["vectors"]), dtype=np.float32)
                matrix = flat.reshape(int(value["count"]), int(value["dim"]))
            return cls(space=str(value["space"]), count=int(value["count"]), matrix=matrix)
        except (TypeError, ValueError, KeyError, AttributeError):
            return None


@dataclass(frozen=True)
class Note:
    """A stored note: its record (provenance, lifecycle), the caller's key and JSON payload."""

    record: MemoryRecord
    key: str
    data: Any
    indexed: bool
    ttl_seconds: float | None
    fields: FieldVectors | None = None

    @property
    def created_at(self) -> datetime:
        return self.record.created_at

    @property
    def updated_at(self) -> datetime:
        return self.record.updated_at


def _dump(data: Any) -> str:
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a note's data must be JSON-serialisable (dicts, lists, strings, numbers, "
                        f"booleans, None): {exc}") from None


def _note(record: MemoryRecord) -> Note | None:
    meta = record.metadata
    key = meta.get(KEY_FIELD)
    raw = meta.get(DATA_FIELD)
    if record.kind != NOTE_KIND or not isinstance(key, str) or not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        log.warning("note %s holds unreadable data; it is skipped", record.id)
        return None
    ttl = meta.get(TTL_FIELD)
    raw_fields = meta.get(FIELDS_FIELD)
    return Note(record=record, key=key, data=data, indexed=bool(meta.get(INDEXED_FIELD, True)),
                ttl_seconds=float(ttl) if isinstance(ttl, (int, float)) and ttl > 0 else None,
                fields=FieldVectors.from_json(raw_fields) if isinstance(raw_fields, str) else None)


class NoteStore:
    """put / get / delete / scan / rank / touch / sweep for the keyed notes of one namespace.

    Obtain it as `memory.notes`: it writes through the Memory's RecordWriter and reads its store,
    lexical index, policy, embedder and weights."""

    def __init__(self, *, namespace: str, gate: OpenGate, policy: NamespacePolicy, store: ChromaStore,
                 records: RecordWriter, lexical: LexicalIndex, sync: LexicalSync, stats: WriteStats,
                 embedder: Callable[[], Embedder], weights: Callable[[], RecallWeights],
                 users: Callable[[], list[str]], max_text_chars: int) -> None:
        self.namespace = namespace
        self._gate = gate
        self._policy = policy
        self._store = store
        self._records = records
        self._lexical = lexical
        self._sync = sync
        self._stats = stats
        self._embedder = embedder
        self._weights = weights
        self._users = users
        self._max_text_chars = max_text_chars

    def note_id(self, user_id: str, key: str) -> str:
        """The record id of `key` for `user_id`: stable, so a lookup by key needs no filter."""
        raw = json.dumps([self.namespace, user_id, key], ensure_ascii=False)
        return "n" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:31]

    # -- writing --------------------------------------------------------------------------------

    def put(
        self,
        key: str,
        text: str,
        *,
        user_id: str,
        data: Any = None,
        scope: str | None = None,
        indexed: bool = True,
        ttl_seconds: float | None = None,
        author: str = "agent",
        source_kind: str = "operator",
        screen_sensitive: bool = False,
        actor: str | None = None,
        fields: FieldVectors | None = None,
    ) -> Note:
        """Store `data` under `key` for `user_id`, replacing what was there (a new version).

        `text` is what recall and search match against; `fields`, the vectors of the caller's
        index fields, when it scores items by field. `ttl_seconds` is a refreshable lifetime
        (see `touch`); without it the policy's ttl applies from the time of writing. Raises
        PolicyError under mode `off` and NoteRefusedError for a secret anywhere in text or data.
        """
        self._gate.check()
        policy = self._policy.require_writes("a note write")
        owner = check_new_user_id(user_id)
        if not isinstance(key, str) or not key:
            raise TypeError(f"a note key is a non-empty string, got {key!r}")
        check_optional_str(key, name="key", max_chars=MAX_KEY_CHARS)
        body = check_text(text[:self._max_text_chars] if isinstance(text, str) else text)
        payload = _dump(data)
        check_optional_str(payload, name="the note's data (as JSON)", max_chars=MAX_DATA_CHARS)
        who = check_name(actor, name="actor") if actor is not None else author
        self._screen(body, {"key": key, "data": data, "scope": scope, "actor": who},
                     exclude_sensitive=screen_sensitive and policy.exclude_sensitive)
        refreshable = check_ttl(ttl_seconds)
        now = utcnow()
        lifetime = refreshable or (policy.ttl_seconds or None)
        record_id = self.note_id(owner, key)
        meta: dict[str, Any] = {KEY_FIELD: key, DATA_FIELD: payload, INDEXED_FIELD: bool(indexed),
                                TTL_FIELD: float(refreshable or 0.0)}
        if fields is not None:
            meta[FIELDS_FIELD] = fields.to_json()
        records = self._records
        with records.lock:
            found = records.read(owner, [record_id])
            before = found[0] if found else None
            if before is not None:
                version = before.version + 1
                created = before.created_at
            else:
                # A key deleted earlier keeps its trail: versions continue after it.
                version = max((int(e.get("version", 0)) for e in records.history.for_record(record_id)),
                              default=0) + 1
                created = now
            record = MemoryRecord(
                id=record_id, text=body, hash=text_hash(body), kind=NOTE_KIND, user_id=owner,
                namespace=self.namespace, scope=normalise_scope(scope), author=author,
                source_kind=source_kind, state="valid", created_at=created, updated_at=now,
                expires_at=now + timedelta(seconds=lifetime) if lifetime else None,
                metadata=meta,
                version=version,
            )
            if before is None:
                records.insert(owner, [record], self._embedder().embed([body]), actor=who,
                               details=[{"note_key": key}])
            else:
                # Re-embedded only when the text changed: an unchanged text keeps its stored vector.
                records.update(before, record, action="update", actor=who, reason=None,
                               reembed=before.text != body, details={"note_key": key})
        return Note(record=record, key=key, data=json.loads(payload), indexed=bool(indexed), ttl_seconds=refreshable,
                    fields=fields)

    def _screen(self, text: str, fields: dict[str, Any], *, exclude_sensitive: bool) -> None:
        stats = self._stats
        found = secret_fields({"text": text, **fields}, identifiers=("key",))
        if found:
            # The text is drawn from the data, so the two usually hold the same secret: count it once.
            kinds = max(found.values(), key=len)
            stats.add_secrets(kinds)
            raise NoteRefusedError(
                f"mnemic refused to store this item: {', '.join(found)} holds what looks like a secret "
                f"({', '.join(sorted(set(kinds)))}), and memory never stores secrets. Nothing was written."
            )
        if exclude_sensitive:
            category = sensitive_category(text)
            if category is not None:
                stats.add_sensitive(category)
                raise NoteRefusedError(
                    f"mnemic refused to store this item: it is about {category}, a category the memory "
                    "policy excludes (exclude_sensitive). Nothing was written."
                )

    def delete(self, key: str, *, user_id: str, actor: str = "agent") -> bool:
        """Remove the note under `key`; its history keeps a tombstone. False when there was none.
        Allowed in every policy mode: erasure must always work."""
        self._gate.check()
        owner = check_user_id(user_id)
        who = check_name(actor, name="actor")
        record_id = self.note_id(owner, key)
        with self._records.lock:
            found = self._records.read(owner, [record_id])
            if not found:
                return False
            self._records.remove(found[0], actor=who, reason=None)
        return True

    def touch(self, notes: Iterable[Note]) -> None:
        """Restart the lifetime of notes that have a refreshable ttl (a read counts as use).
        Not a mutation: no history entry, no new version."""
        by_owner: dict[str, builtins.list[str]] = {}
        for note in notes:
            if note.ttl_seconds is not None:
                by_owner.setdefault(note.record.user_id, []).append(note.record.id)
        if not by_owner:
            return
        now = utcnow()
        with self._records.lock:
            for owner, ids in by_owner.items():
                # The stored record, not the one read before: a write since then must not be undone.
                current = [r for r in self._records.read(owner, ids) if not r.is_expired(now)]
                refreshed = [r.model_copy(update={"expires_at": now + timedelta(seconds=ttl), "last_accessed_at": now})
                             for r in current if (ttl := float(r.metadata.get(TTL_FIELD) or 0.0)) > 0]
                self._records.refresh(refreshed)

    def sweep(self, *, user_ids: Sequence[str] | None = None, scope: str | None = None,
              actor: str = "ttl") -> int:
        """Delete expired notes (they are never served; this reclaims their space). Returns how many."""
        self._gate.check()
        now = utcnow()
        removed: dict[str, list[str]] = {}
        owners = self._users() if user_ids is None else check_items(
            user_ids, name="user_ids", what="a user id or a list of them", example="user_ids=['alice']")
        for owner in owners:
            for note, _ in self._rows(owner, scope, vectors=False, include_expired=True):
                if note.record.is_expired(now):
                    with self._records.lock:
                        self._records.remove(note.record, actor=actor, reason="expired", scrub=False)
                    removed.setdefault(owner, []).append(note.record.id)
        if removed:
            with self._records.lock:
                self._records.scrub(removed)  # once for the sweep, not once per note
        return sum(len(ids) for ids in removed.values())

    # -- reading --------------------------------------------------------------------------------

    def get(self, keys: Sequence[str], *, user_id: str) -> dict[str, Note]:
        """The servable notes (valid, not expired) under `keys`, by key; absent keys are left out."""
        self._gate.check()
        owner = check_user_id(user_id)
        ids = {self.note_id(owner, k): k for k in check_items(keys, name="keys", what="a note key or a list of them",
                                                              example="keys=['favourite-tea']")}
        if not ids:
            return {}
        now = utcnow()
        found: dict[str, Note] = {}
        for row in self._store.get(owner, ids=list(ids)):
            note = _note(self._records.decode(row))
            if note is not None and ids.get(row.id) == note.key and self._servable(note, owner, now):
                found[note.key] = note
        return found

    def scan(self, *, user_id: str, scope: str | None = None,
             vectors: bool = False) -> builtins.list[tuple[Note, np.ndarray | None]]:
        """Every servable note of `user_id` in `scope` (with its stored vector when asked)."""
        self._gate.check()
        return list(self._rows(check_user_id(user_id), scope, vectors=vectors, include_expired=False))

    def _rows(self, owner: str, scope: str | None, *, vectors: bool,
              include_expired: bool) -> Iterable[tuple[Note, np.ndarray | None]]:
        path = normalise_scope(scope)
        where: dict[str, Any] = {"kind": NOTE_KIND} if path == ROOT else {
            "$and": [{"kind": NOTE_KIND}, {"scope_path": {"$contains": path}}]}
        now = utcnow()
        offset = 0
        while True:
            rows = self._store.get(owner, where=where, limit=_PAGE, offset=offset, embeddings=vectors)
            for row in rows:
                note = _note(self._records.decode(row))
                if note is None:
                    continue
                if note.record.user_id != owner or note.record.state != "valid":
                    continue
                if not include_expired and note.record.is_expired(now):
                    continue
                yield note, row.embedding
            if len(rows) < _PAGE:
                return
            offset += _PAGE

    def rank(self, query: str, notes: Sequence[tuple[Note, np.ndarray | None]], *,
             user_id: str) -> builtins.list[tuple[float, Note]]:
        """Every indexed note scored against `query`, best first. Notes recall would call relevant
        get recall's hybrid score (dense cosine, bm25 within the user's records, recency,
        importance, with the Memory's weights); the rest follow with score 0.0, nearest first: a
        key-value search returns its top k even when none is relevant, but says so. Notes written
        unindexed, or scanned without vectors, are left out."""
        owner = check_user_id(user_id)
        query_text = check_text(query, name="query", max_chars=self._max_text_chars)
        ranked = [(n, v) for n, v in notes if n.indexed and v is not None]
        if not ranked:
            return []
        vector = self._embedder().embed([query_text])[0]
        self._sync.maybe_sync(owner)
        wanted = {n.record.id for n, _ in ranked}
        # Words weighed within the user's own records (FTS5's own bm25 weighs them by the whole
        # table: other users' words would move this user's scores).
        bm25 = {rid: match.bm25 for rid, match in self._lexical.word_scores(query_text, user_id=owner).of(
            sorted(wanted)).items() if match.bm25 is not None}
        cosines = {n.record.id: float(np.dot(v, vector)) for n, v in ranked}
        by_id = {n.record.id: n for n, _ in ranked}
        candidates = [Candidate(record=n.record, cosine=cosines[n.record.id], bm25=bm25.get(n.record.id))
                      for n, _ in ranked]
        scored = [(round(score, 6), by_id[c.record.id]) for score, c, _ in fuse(candidates, self._weights(), utcnow())]
        seen = {note.record.id for _, note in scored}
        rest = sorted((rid for rid in by_id if rid not in seen), key=lambda rid: (-cosines[rid], rid))
        return scored + [(0.0, by_id[rid]) for rid in rest]

    @staticmethod
    def _servable(note: Note, owner: str, now: datetime) -> bool:
        return note.record.user_id == owner and note.record.is_servable(now)


__all__ = ["NOTE_KIND", "FieldVectors", "Note", "NoteRefusedError", "NoteStore"]

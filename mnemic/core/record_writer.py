"""The one way a user's records change: audit entry and keyword row first, then Chroma.

Each change is one local transaction (the audit entry and the record's keyword row, in the local
database of an embedded store) followed by one Chroma write. That order is what crash repair
relies on. An entry written before its mutation carries the version the mutation produces, so
`history.applied_entries` leaves out one whose change never landed; the keyword index is a cache
that `Memory` repairs from Chroma on open. When the Chroma write fails in this process, the local
half is undone, so nothing claims a change that did not happen.

On a Chroma server the audit trail lives in the server (every process must see it): the entry is
then a Chroma write of its own, made before the local transaction.

The write pipeline, notes and Memory's own update/invalidate/confirm/delete/forget all write
through here, under one lock.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .codec import from_metadata, to_metadata
from .history import ERASED_REASON, Action, HistoryLog, entry
from .identity import erased_owner_id
from .lexical import LexicalIndex
from .local_db import LocalDatabase
from .records import MemoryRecord
from .scrub import Scrubber
from .store import ChromaStore, StoredRow

log = logging.getLogger("mnemic")


class ConcurrentChangeError(RuntimeError):
    """A record changed (or went) between the read a change was built on and its write."""

    def __init__(self, record_id: str, expected_version: int, current: MemoryRecord | None) -> None:
        self.record_id = record_id
        self.current = current
        now = "was deleted" if current is None else f"is now version {current.version} ({current.state})"
        super().__init__(
            f"record {record_id} changed while this change was being prepared: it was read at version "
            f"{expected_version} and {now}, by another Memory object or process. Nothing was written; "
            f"read the record again and repeat the change if it still applies.")


class RecordLock:
    """The record lock: held by whoever changes a namespace's records, for the whole change.

    THE LOCK ORDER RULE (one for the whole package): never wait for the background writer
    (`drain()`, or the result of a queued job) while holding this lock. Queued jobs run on the
    writer thread and take this lock, so a caller that holds it and waits for them waits forever.
    A call that must see queued writes drains first and locks after. The only locks taken inside
    this one are leaf locks (the lexical index's, the store's collection cache, the writer's queue
    bookkeeping), which never wait for anything. `BackgroundWriter` checks `held()` and refuses a
    wait that breaks the rule, so a breach fails at once instead of hanging.

    Reentrant: a mutation reads the record it changes, and the pipeline retires records while it
    holds the lock for a whole batch.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = threading.local()

    def __enter__(self) -> RecordLock:
        self._lock.acquire()
        self._depth.value = getattr(self._depth, "value", 0) + 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth.value -= 1
        self._lock.release()

    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
        return getattr(self._depth, "value", 0) > 0


class RecordWriter:
    def __init__(self, store: ChromaStore, lexical: LexicalIndex, history: HistoryLog, local: LocalDatabase,
                 embed: Callable[[Sequence[str]], np.ndarray], *, sole_writer: bool,
                 scrubber: Scrubber | None = None,
                 admit: Callable[[MemoryRecord, MemoryRecord | None], None] | None = None) -> None:
        self.store = store
        self.lexical = lexical
        self.history = history
        self._local = local
        self._embed = embed
        # Embedded mode: this process is the store's only writer, so the local keyword index knows
        # every record id (repaired on open) and a Chroma lookup is never needed to tell one.
        self.sole_writer = sole_writer
        self.scrubber = scrubber
        # Called for every record (and the version it replaces) before its first write (see
        # Intake.admit); raising refuses it.
        self._admit = admit or (lambda record, before: None)
        self.lock = RecordLock()

    @staticmethod
    def decode(row: StoredRow) -> MemoryRecord:
        return from_metadata(row.id, row.document, row.metadata)

    def read(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The user's records among `ids`, in whatever order Chroma returns them; unknown ids are left out."""
        return [self.decode(row) for row in self.store.get(user_id, ids=list(ids))] if ids else []

    def holders(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The stored records among `ids`. Ids derive from owner and text (records.record_id_for),
        so these are the statements said again, possibly by another process just now."""
        if not ids:
            return {}
        wanted = sorted(self.lexical.known(ids)) if self.sole_writer else list(ids)
        return {r.id: r for r in self.read(user_id, wanted) if r.user_id == user_id}

    def removed(self, ids: Sequence[str]) -> set[str]:
        """Which of `ids` belonged to a deleted or erased record: a new record under one of them
        would inherit the old one's audit trail."""
        return self.history.removed(ids) if ids else set()

    def _apply(self, entries: Sequence[dict[str, Any]], local: Callable[[], None], chroma: Callable[[], None],
               undo: Callable[[], None]) -> None:
        """The local half and the audit entries in one local transaction, then the Chroma write.
        If the Chroma write fails, the entries are deleted and `undo` restores the local half."""
        try:
            with self._local.transaction():
                local()
                # A local trail joins the transaction; a shared one (server) is a Chroma write of
                # its own, still before the record's.
                self.history.add(entries)
        except BaseException:
            if not self.sole_writer:
                self._withdraw(entries)
            raise
        try:
            chroma()
        except BaseException:
            try:
                with self._local.transaction():
                    undo()
                    self._withdraw(entries)
            except Exception as exc:  # the Chroma error is the one to report; repair fixes the rest
                log.error("could not undo the local half of a failed change: %s", exc)
            raise

    def _withdraw(self, entries: Sequence[dict[str, Any]]) -> None:
        self.history.delete([e["entry_id"] for e in entries])

    def insert(self, user_id: str, records: Sequence[MemoryRecord], vectors: Sequence[np.ndarray] | np.ndarray, *,
               actor: str, details: Sequence[dict[str, Any] | None] | None = None) -> None:
        """New records (their "add" entries first), all of one user."""
        if not records:
            return
        for record in records:
            self._admit(record, None)
        extra = details or [None] * len(records)
        entries = [entry("add", record=r, actor=actor, before=None, after=r, version=r.version, details=d)
                   for r, d in zip(records, extra, strict=True)]
        rows = [StoredRow(id=r.id, document=r.text, metadata=to_metadata(r), embedding=v)
                for r, v in zip(records, vectors, strict=True)]
        self._apply(entries, local=lambda: self.index(records), chroma=lambda: self.store.add(user_id, rows),
                    undo=lambda: self.lexical.delete(self.store.collection_name(user_id), [r.id for r in records]))

    def update(self, before: MemoryRecord, after: MemoryRecord, *, action: Action, actor: str,
               reason: str | None, reembed: bool, details: dict[str, Any] | None = None) -> None:
        """Replace a record's text and metadata; its vector too when `reembed` (the text changed).

        Raises ConcurrentChangeError when the stored record is no longer `before`: the record lock
        covers one Memory object, and another object or process may have changed it since it was
        read (a reconcile waits on an LLM for seconds). Writing anyway would undo that change: an
        invalidated fact would be served again, with no trace in its history."""
        self._admit(after, before)
        entries = [entry(action, record=after, actor=actor, before=before, after=after, reason=reason,
                         version=after.version, details=details)]
        vector = self._embed([after.text])[0] if reembed else None
        self._check_unchanged(before)  # after embedding, the slow part, as close to the write as can be
        row = StoredRow(after.id, after.text, to_metadata(after, for_update=True), vector)
        self._apply(entries, local=lambda: self.index([after]),
                    chroma=lambda: self.store.replace_metadata(after.user_id, [row]),
                    undo=lambda: self.index([before]))

    def _check_unchanged(self, before: MemoryRecord) -> None:
        current = self.read(before.user_id, [before.id])
        if not current or current[0].version != before.version:
            raise ConcurrentChangeError(before.id, before.version, current[0] if current else None)

    def refresh(self, records: Sequence[MemoryRecord]) -> None:
        """Rewrite bookkeeping that is not a change of the record (expiry, last access): no
        history entry, no new version. Records of one user, read under `lock`; one that another
        writer changed since is left as that writer left it."""
        if records:
            stored = {r.id: r.version for r in self.read(records[0].user_id, [r.id for r in records])}
            records = [r for r in records if stored.get(r.id) == r.version]
        if records:
            self.store.replace_metadata(records[0].user_id, [
                StoredRow(r.id, r.text, to_metadata(r, for_update=True)) for r in records
            ])

    def remove(self, record: MemoryRecord, *, actor: str, reason: str | None, scrub: bool = True) -> None:
        """Delete a record for good. Its history keeps who did what and when, but nothing the
        record said: the texts are redacted in the same local transaction, before Chroma's delete,
        so no crash leaves a deleted record's text in the trail."""
        tombstone = entry("delete", record=record, actor=actor, before=None, after=None, reason=reason,
                          version=record.version + 1)
        self._forget_reasons_quoting(record.user_id, [record])

        def local() -> None:
            self.history.redact([record.id])
            self.lexical.delete(self.store.collection_name(record.user_id), [record.id])

        self._apply([tombstone], local=local, chroma=lambda: self.store.delete(record.user_id, [record.id]),
                    undo=lambda: self.index([record]))
        if scrub:
            self.scrub({record.user_id: [record.id]})

    def scrub(self, erased: Mapping[str, Sequence[str]]) -> None:
        """Remove from the store's files what removed records left there (see `scrub.py`);
        `erased`: per user, the ids removed from a collection the user still has."""
        if self.scrubber is not None:
            self.scrubber.after_records_erased(erased)

    def erase(self, user_id: str, records: Sequence[MemoryRecord], *, actor: str,
              drop_collection: bool = False, scrub: bool = True) -> int:
        """Remove records and their audit entries (erasure): what remains of each is a tombstone
        saying that something was erased, when and by whom, not whose it was. `drop_collection`
        (the user's every record is erased) drops the user's Chroma collection, and its write log
        with it, instead of deleting record by record."""
        if not records and not drop_collection:
            return 0
        ids = [r.id for r in records]
        tombstones = []
        for record in records:
            tomb = entry("forget", record=record, actor=actor, before=None, after=None,
                         reason="erased", version=record.version + 1)
            tomb["user_id"] = erased_owner_id(record.user_id)
            tombstones.append(tomb)

        erased_entries = self.history.ids_for_records(ids)
        if not drop_collection:
            self._forget_reasons_quoting(user_id, records)

        def local() -> None:
            self.history.delete(erased_entries)
            self.lexical.delete(self.store.collection_name(user_id), ids)
            if drop_collection:
                self.lexical.drop_collection(self.store.collection_name(user_id))

        def chroma() -> None:
            if drop_collection:
                self.store.drop_user(user_id)
            else:
                self.store.delete(user_id, ids)

        # Nothing to undo: erased entries stay erased even if Chroma fails (the caller is told).
        self._apply(tombstones, local=local, chroma=chroma, undo=lambda: None)
        if scrub:
            self.scrub({} if drop_collection else {user_id: ids})
        return len(records)

    def _forget_reasons_quoting(self, user_id: str, erased: Sequence[MemoryRecord]) -> None:
        """Before records are erased, the records they retired stop saying why: a retirement's
        reason may quote its replacement (an LLM's reason, or one an older mnemic wrote), and the
        erased text must leave every file. Done first, so no failure of the erasure leaves a quote
        behind; the retired record still names its replacement's id in `invalidated_by`. A
        replacement names what it retired (`supersedes`, `also_supersedes`)."""
        replaced_by = {old_id: record.id for record in erased
                       for old_id in (record.supersedes, *record.also_supersedes) if old_id}
        retired = [r for r in self.read(user_id, sorted(replaced_by))
                   if r.invalidated_by == replaced_by[r.id] and r.invalid_reason != ERASED_REASON]
        if not retired:
            return
        self.history.drop_reasons([r.id for r in retired], "invalidate")
        self.store.replace_metadata(user_id, [
            StoredRow(r.id, r.text, to_metadata(r.model_copy(update={"invalid_reason": ERASED_REASON}),
                                                for_update=True)) for r in retired])

    def index(self, records: Sequence[MemoryRecord]) -> None:
        """Put records (all of one user) in the lexical index, with where each turn sits."""
        if not records:
            return
        collection = self.store.collection_name(records[0].user_id)
        self.lexical.upsert(((r.id, collection, r.user_id, r.text, r.version) for r in records),
                            turns={r.id: (r.session_id, r.turn) for r in records
                                   if r.session_id is not None and r.turn is not None})
        self.lexical.set_watermark(collection, max(r.updated_at.timestamp() for r in records))


def fresh_id() -> str:
    return uuid.uuid4().hex

"""Changes an operator (or an adapter on a user's behalf) makes to stored records: update,
invalidate, confirm, delete, forget (erasure) and reset, and the places beyond the records that
erasure reaches (`retain`).

Each change waits for the writes queued before it, then reads the record it changes and writes
through the RecordWriter under its lock, so a change never interleaves with a write batch of the
pipeline. In that order: waiting while holding the lock would deadlock (see RecordLock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Protocol

from .erasures import ErasureGuard
from .lexical import LexicalIndex
from .notes import NOTE_KIND
from .record_writer import RecordWriter
from .records import MemoryRecord, text_hash, utcnow
from .retention import SETTING_PREFIX as RETAINED_PREFIX
from .retention import ErasableState, ErasureOutcome, ErasureReport, RetainedPlace, erase_everywhere
from .runs import RunLog
from .scopes import is_within, normalise_scope
from .serving import RecordReader, scope_where, scopes_of
from .store import ChromaStore
from .validation import (
    MAX_SOURCE_CHARS,
    check_categories,
    check_erasure_scope,
    check_flag,
    check_ids,
    check_importance,
    check_metadata,
    check_name,
    check_older_than,
    check_optional_str,
    check_reason,
    check_text,
    check_ttl,
    check_user_id,
)
from .writer import BackgroundWriter, LockOrderError

# `update(source=...)` leaves the source alone unless given (None is a value: "no source").
UNSET: Any = object()


class Replacements(Protocol):
    """What a confirmed pending fact replaces, and its retirement (the write pipeline)."""

    def what_it_replaces(self, confirmed: MemoryRecord) -> tuple[list[MemoryRecord], str]: ...

    def retire(self, olds: Sequence[MemoryRecord], new: MemoryRecord, *, reason: str,
               actor: str) -> list[MemoryRecord]: ...


class BuiltInPlace(ErasableState, Protocol):
    """State of the namespace itself that keeps users' data (and can say whether it holds any)."""

    def in_use(self) -> bool: ...


class RetainedRegistry:
    """Where a namespace keeps users' data beside their records, so erasure reaches it too.

    `built_in` are such places every Memory of the namespace has (its run log): erased in every
    process, and reported only once they hold something."""

    def __init__(self, store: ChromaStore, built_in: Sequence[BuiltInPlace] = ()) -> None:
        self._store = store
        self._built_in = list(built_in)
        # State this process attached (e.g. a store in a Chroma collection); places on disk are
        # recorded in the namespace's settings instead, so every process erases them.
        self._attached: list[ErasableState] = []

    def retain(self, place: RetainedPlace | ErasableState) -> None:
        if isinstance(place, RetainedPlace):
            if self._store.get_setting(place.key) is None:
                self._store.put_setting(place.key, place.to_setting())
            return
        if not isinstance(place, ErasableState):
            raise TypeError("retain() takes a RetainedPlace or an object with label and erase_user(user_id)")
        if all(existing is not place for existing in self._attached):
            self._attached.append(place)

    def places(self) -> list[RetainedPlace]:
        return [RetainedPlace.from_setting(value)
                for _, value in sorted(self._store.settings(RETAINED_PREFIX).items())]

    def erase_user(self, user_id: str) -> ErasureOutcome:
        in_use = [place for place in self._built_in if place.in_use()]
        return erase_everywhere([*self.places(), *in_use, *self._attached], user_id)


class RecordChanges:
    def __init__(self, *, store: ChromaStore, lexical: LexicalIndex, records: RecordWriter,
                 writer: BackgroundWriter, reader: RecordReader, retained: RetainedRegistry, runs: RunLog,
                 max_text_chars: int, refuse_secrets: Callable[..., None], erasures: ErasureGuard) -> None:
        self._store = store
        self._erasures = erasures
        # Erasing records also cuts their texts out of the runs that recalled them into a prompt.
        self._runs = runs
        self._lexical = lexical
        self._records = records
        self._writer = writer
        self._reader = reader
        self._retained = retained
        self._max_text_chars = max_text_chars
        # Raises SecretRefusedError naming the field; runs before the first write of each change.
        self._refuse_secrets = refuse_secrets

    def update(self, record_id: str, *, text: str | None, scope: str | None, categories: Sequence[str] | None,
               importance: float | None, private: bool | None, source: Any, metadata: dict[str, Any] | None,
               ttl_seconds: float | None, actor: str, reason: str | None) -> MemoryRecord:
        actor = check_name(actor, name="actor")
        reason = check_reason(reason)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = check_text(text, max_chars=self._max_text_chars)
            changes["hash"] = text_hash(changes["text"])
        if scope is not None:
            changes["scope"] = normalise_scope(scope)
        if categories is not None:
            changes["categories"] = check_categories(categories)
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if private is not None:
            changes["private"] = check_flag(private, name="private")
        if source is not UNSET:
            changes["source"] = check_optional_str(source, name="source", max_chars=MAX_SOURCE_CHARS)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        if ttl_seconds is not None:
            ttl = check_ttl(ttl_seconds)
            changes["expires_at"] = utcnow() + timedelta(seconds=ttl) if ttl else None
        if not changes:
            raise ValueError("update() needs at least one field to change (text, scope, categories, ...)")
        # The scope as given: normalising it drops the empty segment of a "scheme://" URL.
        screened = {name: scope if name == "scope" else changes[name]
                    for name in ("text", "scope", "categories", "source", "metadata") if name in changes}
        self._refuse_secrets("this update()", **screened, reason=reason)
        self._writer.drain()  # the lock order: drain first, then lock
        with self._records.lock:
            before = self._reader.current(record_id)
            if before.kind == NOTE_KIND:
                # A store item's record carries the stored value and the store's own fields: a
                # change made here would leave the store serving the old value, or losing the item.
                raise ValueError(f"memory {record_id} is an item of a key-value store (kind 'note'), which "
                                 "update() cannot change: put the new value through the store that wrote it "
                                 "(LangGraph: MnemicStore.put(namespace, key, value)), or delete() it")
            after = before.model_copy(update={**changes, "updated_at": utcnow(), "version": before.version + 1})
            after = MemoryRecord.model_validate(after.model_dump())
            self._records.update(before, after, action="update", actor=actor, reason=reason,
                                 reembed="text" in changes and changes["text"] != before.text)
            return after

    def invalidate(self, record_id: str, *, reason: str, actor: str, replaced_by: str | None) -> MemoryRecord:
        reason_text = check_reason(reason, required=True)
        actor = check_name(actor, name="actor")
        if replaced_by is not None:
            (replaced_by,) = check_ids([replaced_by], name="replaced_by")
            if replaced_by == check_ids([record_id], name="record_id")[0]:
                raise ValueError(f"memory {replaced_by} cannot be replaced by itself: replaced_by names the record "
                                 "that now says what is true instead (or leave it out)")
        self._refuse_secrets("this invalidate()", reason=reason_text)
        self._writer.drain()
        with self._records.lock:
            before = self._reader.current(record_id)
            if replaced_by is not None:
                self._reader.current(replaced_by)
            after = before.model_copy(update={
                "state": "invalid", "invalid_reason": reason_text, "invalidated_by": replaced_by,
                "updated_at": utcnow(), "version": before.version + 1,
            })
            self._records.update(before, after, action="invalidate", actor=actor, reason=reason_text,
                                 reembed=False)
            return after

    def confirm(self, record_id: str, *, actor: str, replacements: Replacements | None = None) -> MemoryRecord:
        """Make a pending record valid, and retire the live facts it replaces (`replacements`
        says which). The confirmed record names the first in `supersedes` as it is made valid, so
        a crash before they are retired is finished on the next open; confirming a record that is
        valid already changes nothing."""
        actor = check_name(actor, name="actor")
        self._writer.drain()
        with self._records.lock:
            before = self._reader.current(record_id)
            if before.state == "invalid":
                raise ValueError(f"memory {record_id} is invalid ({before.invalid_reason}); it cannot be confirmed")
            if before.state == "valid":
                return before
            after = before.model_copy(update={"state": "valid", "updated_at": utcnow(),
                                              "version": before.version + 1})
            olds, reason = replacements.what_it_replaces(after) if replacements is not None else ([], "")
            if olds:
                after = after.model_copy(update={"supersedes": olds[0].id,
                                                 "also_supersedes": [old.id for old in olds[1:]]})
            self._records.update(before, after, action="confirm", actor=actor, reason=None, reembed=False)
            if olds and replacements is not None:
                replacements.retire(olds, after, reason=reason, actor=actor)
        return after

    def delete(self, record_id: str, *, actor: str, reason: str | None) -> None:
        actor = check_name(actor, name="actor")
        reason = check_reason(reason)
        self._refuse_secrets("this delete()", reason=reason)
        self._writer.drain()
        with self._records.lock:
            record = self._reader.current(record_id)
            self._runs.cut_texts(record.user_id, self._texts_of([record]))
            self._records.remove(record, actor=actor, reason=reason)

    def _texts_of(self, records: Sequence[MemoryRecord]) -> list[str]:
        """Every text the records have had: a run may have recalled one before it was updated."""
        texts = []
        for record in records:
            texts.append(record.text)
            for entry in self._records.history.for_record(record.id):
                texts += [text for text in (entry.get("before"), entry.get("after")) if isinstance(text, str)]
        return texts

    def forget(self, *, user_id: str | None, scope: str | None, categories: Sequence[str] | None,
               older_than: Any, ids: Sequence[str] | None, actor: str) -> ErasureReport:
        if user_id is None and scope is None and not categories and older_than is None and ids is None:
            raise ValueError(
                "forget() needs at least one criterion (user_id, scope, categories, older_than or ids); "
                "use reset() to empty the whole namespace"
            )
        actor = check_name(actor, name="actor")
        owner = check_user_id(user_id) if user_id is not None else None
        check_erasure_scope(scope)
        if categories is not None and not isinstance(categories, str) and not list(categories):
            raise ValueError("categories=[] names no category: forget() would erase every record in reach. "
                             "Pass the categories to erase, or leave categories out")
        scopes = scopes_of(scope)
        cats = check_categories(categories)
        cutoff = check_older_than(older_than)
        id_set = set(check_ids(ids)) if ids is not None else None
        if owner is not None and scope is None and not cats and cutoff is None and id_set is None:
            # Before anything is erased: another process's queue or journal must not store the
            # user's statements it accepted before now (erasures.py).
            if self._records.lock.held():  # the order is taken before the record lock, never inside it
                raise LockOrderError("mnemic lock order broken: forget(user_id=) was called while holding the "
                                     "record lock; call it outside any memory change")
            self._erasures.mark(owner)
        self._writer.drain()
        users = [owner] if owner is not None else self._store.users()
        erased = 0
        whole_user = owner is not None and scope is None and not cats and cutoff is None and id_set is None
        partial: dict[str, list[str]] = {}
        with self._records.lock:
            for who in users:
                doomed = []
                for row in self._store.iterate(who, where=scope_where(scopes)):
                    record = self._records.decode(row)
                    if id_set is not None and record.id not in id_set:
                        continue
                    if not any(is_within(record.scope, s) for s in scopes):
                        continue
                    if cats and not set(cats) & set(record.categories):
                        continue
                    if cutoff is not None and record.created_at >= cutoff:
                        continue
                    doomed.append(record)
                if doomed and not whole_user:  # (a whole user's runs go with them)
                    self._runs.cut_texts(who, self._texts_of(doomed))  # before erasure takes their history
                # Erasing a whole user drops their collection, and Chroma's write log of it.
                erased += self._records.erase(who, doomed, actor=actor, drop_collection=whole_user, scrub=False)
                if doomed and not whole_user:
                    partial[who] = [r.id for r in doomed]
            if not whole_user:
                self._records.scrub(partial)  # once, after every user's records are gone
                return ErasureReport(erased)
        assert owner is not None
        outcome = self._retained.erase_user(owner)
        with self._records.lock:
            # After what the namespace kept of the user beside their records (kickoff outputs and
            # runs may live in Chroma too): one scrub of the files for all of it.
            self._records.scrub({})
        return ErasureReport(erased, outcome)

    def reset(self) -> None:
        self._writer.drain()
        with self._records.lock:
            for user_id in self._store.users():
                self._lexical.drop_collection(self._store.collection_name(user_id))
            # The namespace's identity survives: its embedder, and where it keeps users' data
            # beside the records (checkpoints are not memory, and must stay erasable).
            kept = dict(self._store.settings(RETAINED_PREFIX))
            embedder = self._store.get_setting("embedder")
            if embedder is not None:
                kept["embedder"] = embedder
            self._store.drop_namespace()
            self._records.history.clear()
            for key, value in kept.items():
                self._store.put_setting(key, value)
            self._records.scrub({})

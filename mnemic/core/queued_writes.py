"""Queued writes: how `remember_many()` acknowledges statements it stores later, durably.

Each accepted statement is journaled (write_journal.py) before it is queued on the background
writer, and the journal entry is retired once its batch has run. On open, entries a dead process
left pending are stored before the store serves anything, unless their record already landed.
This module owns that cycle so the Memory facade only checks input and hands statements over.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from .erasures import ErasureGuard
from .record_writer import RecordWriter
from .records import MemoryRecord
from .safety import SecretRefusedError
from .write_journal import Journaled, WriteJournal
from .write_pipeline import WritePipeline, describe_queued
from .writer import MAX_BATCH_ITEMS, BackgroundWriter, PartialBatchFailure

log = logging.getLogger("mnemic")


class QueuedWrites:
    """Journal, queue, store and retire the statements `remember_many()` accepted."""

    def __init__(self, journal: WriteJournal, writer: BackgroundWriter, pipeline: WritePipeline,
                 records: RecordWriter, erasures: ErasureGuard,
                 admit: Callable[[MemoryRecord], None] = lambda record: None) -> None:
        self._journal = journal
        # The gate every record passes before its first write (Intake.admit): a replayed statement
        # it refuses for a secret is refused for good, on every open.
        self._admit = admit
        self._erasures = erasures
        self._store = records.store
        self._writer = writer
        self._pipeline = pipeline
        self._records = records

    def submit(self, prepared: Sequence[MemoryRecord], *, actor: str) -> None:
        # Journaled before it is acknowledged: what the caller is told survives a crash.
        journaled = self._journal.append(prepared, actor=actor)
        self._writer.submit_batched((prepared[0].kind, actor), journaled, self._persist,
                                    lambda items: describe_queued([j.record for j in items]))

    def erase_user(self, user_id: str) -> None:
        """Statements still queued for the user (the erasure scrubs the file)."""
        self._journal.erase_user(user_id)

    def _persist(self, items: list[Journaled]) -> None:
        """Run on the writer: store a batch of journaled statements, then retire their entries
        (stored or failed: a failure is reported once, not replayed forever)."""
        try:
            # Under the namespace's erasure order (erasures.py): an erasure through another Memory
            # object of this process cannot fall between the check and the write.
            with self._erasures.order:
                kept = self._without_erased(items)
                if kept:
                    accepted = {id(j.record): j.accepted_at for j in kept}
                    self._pipeline.persist_queued(
                        [j.record for j in kept], actor=items[0].actor,
                        stored=lambda group, result: self._undo_if_erased(group, result, accepted))
        except PartialBatchFailure as partial:
            lost = {id(r) for r in partial.items}
            raise PartialBatchFailure([j for j in items if id(j.record) in lost], partial.cause) from None
        finally:
            self._journal.done([j.seq for j in items])

    def _undo_if_erased(self, statements: list[MemoryRecord], stored: list[MemoryRecord],
                        accepted: dict[int, float | None]) -> None:
        """Against a Chroma server another process's erasure may fall between the check above and
        the write (ErasureGuard.undo_if_erased)."""
        times = [when for when in (accepted.get(id(s)) for s in statements) if when is not None]
        if times:
            self._erasures.undo_if_erased(statements[0].user_id, min(times), stored)

    def replay(self) -> None:
        """Store what `remember_many()` acknowledged before the last process died (on open)."""
        pending = self._journal.pending()
        if not pending:
            return
        log.warning("storing %d statement(s) remember_many() accepted before the last process stopped", len(pending))
        for user_id in dict.fromkeys(j.record.user_id for j in pending):
            mine = [j for j in pending if j.record.user_id == user_id]
            # In batches the size the writer uses, each retired once stored: a replay cut short
            # by another crash resumes where it stopped.
            for start in range(0, len(mine), MAX_BATCH_ITEMS):
                with self._erasures.order:  # as in _persist
                    self._replay_batch(user_id, mine[start:start + MAX_BATCH_ITEMS])

    def _without_erased(self, items: list[Journaled]) -> list[Journaled]:
        """`items` but the statements whose user another process erased after they were accepted
        (see erasures.py): storing them would bring the user back."""
        kept: list[Journaled] = []
        for user_id in dict.fromkeys(j.record.user_id for j in items):
            mine = [j for j in items if j.record.user_id == user_id]
            dropped = self._erasures.dropped(user_id, [j.accepted_at for j in mine])
            if any(dropped):
                log.warning("dropping %d queued statement(s) of a user erased after they were accepted", sum(dropped))
            kept += [j for j, gone in zip(mine, dropped, strict=True) if not gone]
        return kept

    def _refused(self, items: list[Journaled]) -> set[int]:
        """The entries of `items` holding a secret (a journal an older mnemic wrote may hold one, a
        credential given as user id say): refused on every try, so dropped rather than kept and
        retried on every open, with the secret on disk all along. Logged without the text."""
        refused: set[int] = set()
        for j in items:
            try:
                self._admit(j.record)
            except SecretRefusedError:
                refused.add(j.seq)
        if refused:
            log.warning("dropping %d queued statement(s) refused for holding a secret (see the refusal logged "
                        "above for the field); they are not stored", len(refused))
        return refused

    def _replay_batch(self, user_id: str, batch: list[Journaled]) -> None:
        erased = {j.seq for j in batch} - {j.seq for j in self._without_erased(batch)}
        if erased:
            self._journal.done(sorted(erased))
            batch = [j for j in batch if j.seq not in erased]
            if not batch:
                return
        holders = self._records.holders(user_id, [j.record.id for j in batch])
        # A statement whose record landed before the crash is not written again, but what it
        # replaces may still be live: the crash can fall between the two writes.
        # A holder retired or expired is a dead twin the statement was accepted beside, not the
        # statement landed: it is written (persist_new gives it a fresh id).
        todo = [j for j in batch if holders.get(j.record.id) is None or holders[j.record.id].hash != j.record.hash
                or holders[j.record.id].state == "invalid" or holders[j.record.id].is_expired()]
        refused = self._refused(todo)
        if refused:
            self._journal.done(sorted(refused))
            batch = [j for j in batch if j.seq not in refused]
            todo = [j for j in todo if j.seq not in refused]
        waiting = {j.seq for j in todo}
        landed = [j for j in batch if j.seq not in waiting]
        kept: set[int] = set()
        for actor in dict.fromkeys(j.actor for j in landed):
            try:
                self._pipeline.finish_retirements([holders[j.record.id] for j in landed if j.actor == actor],
                                                  actor=actor)
            except Exception as exc:  # the statements are stored; kept so the next open tries again
                log.error("could not retire what stored statements replace: %s", exc)
                kept.update(j.seq for j in landed if j.actor == actor)
        for actor in dict.fromkeys(j.actor for j in todo):
            theirs = [j for j in todo if j.actor == actor]
            try:
                self._pipeline.persist_new([j.record for j in theirs], actor=actor)
            except Exception as exc:  # kept for the next open rather than lost
                log.error("could not store queued statements of a user on open: %s", exc)
                kept.update(j.seq for j in theirs)
        self._journal.done([j.seq for j in batch if j.seq not in kept])

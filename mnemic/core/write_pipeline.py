"""The write pipeline: new records become stored ones, each reconciled with what its user has.

Per record: an exact or near duplicate merges into the record it repeats; a contradiction (or an
update) inserts the new record with `supersedes` and retires the old one, which is kept with
`invalidated_by` and the reason; anything else is inserted. The rules in `reconcile.py` decide,
or the LLM when one is configured (one structured call per 20 records that have related facts).

A pipeline belongs to one namespace and writes through its `RecordWriter` (history entry, then
Chroma record, then lexical index), holding the writer's lock for a whole batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .embeddings import Embedder
from .extraction import ask_structured
from .identity import user_key, user_label
from .reconcile import (
    INSERT,
    Decision,
    Similar,
    Thresholds,
    build_reconcile_messages,
    decide,
    parse_reconcile,
    reconcile_schema,
)
from .record_writer import ConcurrentChangeError, RecordWriter, fresh_id
from .records import MemoryRecord, utcnow
from .stats import WriteStats
from .writer import PartialBatchFailure

log = logging.getLogger("mnemic")

# A record in a batch is also reconciled with this many of the batch's earlier records nearest it.
BATCH_NEIGHBOURS = 12
# Kinds the rules alone reconcile (within a scope, as for every kind): the LLM's reconciliation
# prompt is about facts on a person, and a lesson's write must not cost a model call.
RULES_ONLY_KINDS = frozenset({"lesson"})


def describe_queued(records: Sequence[MemoryRecord]) -> str:
    """What a failed queued batch held, for the error that reports it."""
    users = list(dict.fromkeys(r.user_id for r in records))
    # Named by owner key, never by id: a user id may be a credential or a person's name.
    keys = ", ".join(map(user_key, users[:5]))
    whose = user_label(users[0]) if len(users) == 1 else f"{len(users)} users (keys {keys})"
    return f"{len(records)} statement(s) for {whose} from remember_many()"


class WritePipeline:
    """Reconciles new statements with what their user already has, then writes them through
    `records`. Asks for the embedder and the LLM each time it runs (their owner may swap them)."""

    def __init__(self, records: RecordWriter, thresholds: Thresholds, *, embedder: Callable[[], Embedder],
                 llm: Callable[[], Any], stats: WriteStats) -> None:
        self._records = records
        self._thresholds = thresholds
        self._embedder = embedder
        self._llm = llm
        self._stats = stats

    def persist_queued(self, records: list[MemoryRecord], *, actor: str,
                       stored: Callable[[list[MemoryRecord], list[MemoryRecord]], None] | None = None) -> None:
        """A batch of queued statements, possibly from several users: each user's in their order
        (one user's records never reconcile with another's, so users need no order between them).
        `stored(statements, records)` is told what each user's statements became, once written."""
        by_user: dict[str, list[MemoryRecord]] = {}
        for record in records:
            by_user.setdefault(record.user_id, []).append(record)
        lost: list[MemoryRecord] = []
        cause: BaseException | None = None
        for group in by_user.values():
            try:
                result = self.persist_new(group, actor=actor)
                if stored is not None:
                    stored(group, result)
            except Exception as exc:  # one user's failure must not cost the other users their writes
                lost += group
                cause = cause or exc
        if cause is not None:
            raise PartialBatchFailure(lost, cause)

    def persist_new(
        self,
        records: list[MemoryRecord],
        *,
        actor: str,
        decisions: Mapping[str, Decision] | None = None,
        use_llm: bool = True,
    ) -> list[MemoryRecord]:
        """Write new records, each reconciled with what the user already has, in order.

        Per record: an exact or near duplicate merges into the record it repeats; a contradiction
        (or an update) inserts the new record with `supersedes` and invalidates the old one, which
        is kept with `invalidated_by` and the reason; anything else is inserted. `decisions` (by
        record id) come from the LLM extractor; without them the LLM reconciles when one is
        configured and `use_llm`, else the rules decide. Returns, per record, the record that now
        stands for it.
        """
        if not records:
            return []
        user_id = records[0].user_id
        # Stamped as written, not as accepted: another process's keyword index catches up by
        # reading what changed since its newest change (lexical_sync.py), and a statement that
        # waited in a queue would otherwise land "in the past" and never be read by it.
        written = utcnow()
        records = [r if r.updated_at >= written else r.model_copy(update={"updated_at": written}) for r in records]
        with self._records.lock:
            vectors = self._embedder().embed([r.text for r in records])
            pools = self.similar_many(user_id, list(vectors), kind=records[0].kind)
            # A record's id is derived from its owner and text (see records.record_id_for), so two
            # processes storing one statement through a server write one record. The record that
            # already holds an id (written by another process after the query above, or missed by
            # the approximate index) is reconciled with like any similar one.
            ids = list(dict.fromkeys(r.id for r in records))
            holders = self._records.holders(user_id, ids)
            for record, pool in zip(records, pools, strict=True):
                holder = holders.get(record.id)
                if holder is not None and all(s.record.id != holder.id for s in pool):
                    pool.insert(0, Similar(holder, 1.0))
            # An id held by a record this one does not merge into, or by a deleted one, is not reused.
            taken = set(holders) | self._records.removed([i for i in ids if i not in holders])
            plan: dict[str, Decision] = dict(decisions or {})
            rules_only = records[0].kind in RULES_ONLY_KINDS
            if decisions is None and use_llm and self._llm() is not None and not rules_only:
                plan = self._llm_reconcile(records, pools)
            changed: dict[str, MemoryRecord] = {}  # existing records this batch merged or invalidated
            # Records inserted by this batch, so later ones reconcile with them too (vectors in one
            # matrix: comparing each record with every earlier one in Python would be quadratic).
            inserted: list[MemoryRecord] = []
            inserted_vectors = np.zeros((len(records), vectors.shape[1]), dtype=np.float32)
            inserted_by_hash: dict[str, int] = {}
            unwritten: list[tuple[MemoryRecord, np.ndarray, Decision]] = []
            result: list[MemoryRecord] = []

            def claim(record: MemoryRecord) -> MemoryRecord:
                if record.id in taken:
                    record = record.model_copy(update={"id": fresh_id()})
                taken.add(record.id)
                return record

            def flush() -> None:
                if not unwritten:
                    return
                self._records.insert(
                    user_id, [r for r, _, _ in unwritten], [v for _, v, _ in unwritten], actor=actor,
                    details=[{"source_kind": r.source_kind, "author": r.author, "decision": d.action,
                              "decided_by": d.by, "reason": d.reason,
                              "supersedes": list(d.targets) if d.action in ("update", "invalidate") else []}
                             for r, _, d in unwritten],
                )
                unwritten.clear()

            now = utcnow()
            for record, vector, pool in zip(records, vectors, pools, strict=True):
                candidates = [Similar(changed.get(s.record.id, s.record), s.cosine) for s in pool]
                if inserted:
                    sims = inserted_vectors[:len(inserted)] @ vector
                    nearest = set(np.argsort(-sims)[:BATCH_NEIGHBOURS].tolist())
                    if record.hash in inserted_by_hash:
                        nearest.add(inserted_by_hash[record.hash])
                    candidates += [Similar(changed.get(inserted[i].id, inserted[i]), float(sims[i]))
                                   for i in sorted(nearest)]
                candidates = [s for s in candidates
                              if s.record.state != "invalid" and not s.record.is_expired(now)]
                decision, targets = self._decide(record, plan.get(record.id), candidates, changed)
                if decision.action == "keep":
                    twin = targets[0]
                    if any(r.id == twin.id for r, _, _ in unwritten):
                        flush()
                    merged = self._merge_duplicate(twin, record, actor=actor, reason=decision.reason)
                    if merged is not None:
                        changed[twin.id] = merged
                        result.append(merged)
                        self._stats.bump("facts_merged")
                        continue
                    decision = INSERT
                record = claim(record)
                if decision.action in ("update", "invalidate") and targets:
                    record = self._successor(record, targets, update=decision.action == "update")
                    unwritten.append((record, vector, decision))
                    flush()  # the replacement exists before anything points at it
                    for old in targets:
                        changed[old.id] = self._retire(old, record, reason=decision.reason, actor=actor)
                        self._stats.bump("facts_invalidated")
                else:
                    unwritten.append((record, vector, decision))
                inserted_vectors[len(inserted)] = vector
                inserted_by_hash.setdefault(record.hash, len(inserted))
                inserted.append(record)
                result.append(record)
                self._stats.bump("facts_inserted")
            flush()
            return result

    def with_usable_ids(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """The records, each under the id it will be stored with. An id derives from owner and text,
        so a statement said again keeps its record's id; but an id that a retired or expired record
        holds, or that an erased one held, is not reused (`persist_new` gives a fresh one). Decided
        now, when `remember_many()` accepts the statements, the id it returns is the one stored:
        decided at write time, the caller held the dead record's id (erasing by it left the new
        fact live), and a replay after a crash took the dead record for the statement landed."""
        if not records:
            return records
        ids = list(dict.fromkeys(r.id for r in records))
        holders = self._records.holders(records[0].user_id, ids)
        dead = {i for i, held in holders.items() if not held.is_servable() and held.state != "pending"}
        dead |= self._records.removed([i for i in ids if i not in holders])
        return [r.model_copy(update={"id": fresh_id()}) if r.id in dead else r for r in records]

    def _decide(self, record: MemoryRecord, planned: Decision | None, candidates: list[Similar],
                changed: Mapping[str, MemoryRecord]) -> tuple[Decision, list[MemoryRecord]]:
        """The decision for one record and the live records it targets."""
        ruled = decide(record, candidates, self._thresholds)
        if planned is None:
            decision = ruled
        elif ruled.action == "keep" and (planned.action == "insert" or ruled.reason.startswith("the same")):
            # No second copy, whatever the model said: duplicates merge by rule.
            decision = ruled
        else:
            decision = planned
        if decision.action == "insert":
            return decision, []
        if record.state != "valid" and decision.action in ("update", "invalidate"):
            return INSERT, []  # an unconfirmed fact (tool result, document) never retires a known one
        # Whoever decided, a decision only ever touches the user's live records in the new one's
        # scope: the rules compare within a scope, and a model's targets are held to the same.
        known = {s.record.id: s.record for s in candidates if s.record.scope == record.scope}
        missing = [t for t in decision.targets if t not in known]
        if missing:
            # The model may name a fact it was shown that is not among this fact's nearest ones.
            for stored in self._records.read(record.user_id, missing):
                fetched = changed.get(stored.id) or stored
                if fetched.user_id == record.user_id and fetched.state != "invalid" \
                        and not fetched.is_expired() and fetched.scope == record.scope:
                    known[fetched.id] = fetched
        targets = [known[t] for t in decision.targets if t in known]
        if not targets:
            return INSERT, []
        if decision.action == "keep":
            targets = targets[:1]
        return decision, targets

    @staticmethod
    def _successor(record: MemoryRecord, olds: list[MemoryRecord], *, update: bool) -> MemoryRecord:
        """The new record that replaces `olds`: linked to the first, and at least as private as any
        (a replacement must not publish what the old fact kept to its source)."""
        changes: dict[str, Any] = {"supersedes": olds[0].id, "also_supersedes": [o.id for o in olds[1:]]}
        private_olds = [o for o in olds if o.private]
        if private_olds and not record.private:
            changes["private"] = True
            changes["source"] = record.source or private_olds[0].source
        if update:
            changes["categories"] = list(dict.fromkeys(
                [*record.categories, *(c for o in olds for c in o.categories)]))
            changes["importance"] = max([record.importance, *(o.importance for o in olds)])
        return record.model_copy(update=changes)


    def what_it_replaces(self, confirmed: MemoryRecord) -> tuple[list[MemoryRecord], str]:
        """The live facts a pending fact replaces once confirmed ("…is now Tom Baker" after "…is
        Ann Lee"), and why: while unconfirmed it retired nothing (`_decide` inserts an unconfirmed
        fact however it reads), so without retiring them both values would be served as current.
        The rules decide, as for any statement said again. Only facts: a note is a value under its
        key, and the other kinds are never reconciled with each other."""
        if confirmed.kind != "fact":
            return [], ""
        with self._records.lock:
            vector = self._embedder().embed([confirmed.text])[0]
            (pool,) = self.similar_many(confirmed.user_id, [vector], kind=confirmed.kind)
            others = [s for s in pool if s.record.id != confirmed.id]
            decision, targets = self._decide(confirmed, None, others, {})
        if decision.action not in ("update", "invalidate"):
            return [], ""
        return targets, decision.reason

    def retire(self, olds: Sequence[MemoryRecord], new: MemoryRecord, *, reason: str,
               actor: str) -> list[MemoryRecord]:
        """Retire `olds` as replaced by `new` (stored already, naming the first in `supersedes`,
        so that a crash before this is finished by `finish_interrupted_retirements`)."""
        with self._records.lock:
            retired = [self._retire(old, new, reason=reason, actor=actor) for old in olds]
        self._stats.bump("facts_invalidated", len(retired))
        return retired

    def finish_retirements(self, landed: Sequence[MemoryRecord], *, actor: str) -> int:
        """Retire the records that stored replacements supersede but that are still live: a
        replacement is written before the record it retires, so a crash between the two leaves
        both served. Returns how many were retired."""
        replacing = [r for r in landed if r.supersedes and r.state == "valid"]
        if not replacing:
            return 0
        retired = 0
        with self._records.lock:
            wanted = [old_id for r in replacing for old_id in (r.supersedes or "", *r.also_supersedes)]
            olds = {r.id: r for r in self._records.read(replacing[0].user_id, wanted)}
            for record in replacing:
                for old_id in (record.supersedes or "", *record.also_supersedes):
                    old = olds.get(old_id)
                    if old is not None and old.state != "invalid":
                        self._retire(old, record, reason="replaced by a statement stored before the last process "
                                     "stopped", actor=actor)
                        retired += 1
        return retired

    def finish_interrupted_retirements(self, *, actor: str = "repair") -> int:
        """After a crash (and on repair()): retire every record a live replacement supersedes.
        Reads every record of every user, as the rest of a full check does: the journal replays
        only what remember_many() queued, while remember(), observe() and confirm() write
        replacements directly."""
        retired = 0
        for user_id in self._records.store.users():
            replacing = [record for record in map(self._records.decode, self._records.store.iterate(user_id))
                         if record.supersedes and record.state == "valid"]
            for start in range(0, len(replacing), 500):
                retired += self.finish_retirements(replacing[start:start + 500], actor=actor)
        return retired

    def _retire(self, old: MemoryRecord, new: MemoryRecord, *, reason: str, actor: str,
                retry: bool = True) -> MemoryRecord:
        after = old.model_copy(update={
            "state": "invalid", "invalid_reason": reason, "invalidated_by": new.id,
            "updated_at": utcnow(), "version": old.version + 1,
        })
        try:
            self._records.update(old, after, action="invalidate", actor=actor, reason=reason, reembed=False)
        except ConcurrentChangeError as changed:
            # Another writer got there first: retire what it left, unless it is gone or retired.
            current = changed.current
            if current is None:
                return after
            if current.state == "invalid" or not retry:
                return current
            return self._retire(current, new, reason=reason, actor=actor, retry=False)
        return after

    def similar(self, user_id: str, vector: np.ndarray, *, kind: str, k: int = 12,
                scope: str | None = None) -> list[Similar]:
        return self.similar_many(user_id, [vector], kind=kind, k=k, scope=scope)[0]

    def similar_many(self, user_id: str, vectors: Sequence[np.ndarray], *, kind: str, k: int = 12,
                     scope: str | None = None) -> list[list[Similar]]:
        """Per vector, the user's nearest live records of one kind (a conversation fact must never
        merge into, or retire, a lesson or a LangGraph store item), and of one scope when given.
        No `where` filter: Chroma evaluates one against every record in the database, so state,
        kind, scope and expiry are checked here. One store query for all the vectors."""
        now = utcnow()
        pools = []
        for rows in self._records.store.query_many(user_id, vectors, n_results=k * 2):
            found = []
            for row in rows:
                record = self._records.decode(row)
                if (record.user_id != user_id or record.state == "invalid" or record.is_expired(now)
                        or record.kind != kind or (scope is not None and record.scope != scope)):
                    continue
                found.append(Similar(record, 1.0 - float(row.distance or 0.0)))
                if len(found) >= k:
                    break
            pools.append(found)
        return pools

    def _llm_reconcile(self, records: list[MemoryRecord], pools: list[list[Similar]]
                       ) -> dict[str, Decision]:
        """The LLM's decisions for records that have related existing facts (one call per 20
        records; none at all when nothing related exists). Empty after two failed tries."""
        decisions: dict[str, Decision] = {}
        for start in range(0, len(records), 20):
            chunk = records[start:start + 20]
            alias_of: dict[str, int] = {}
            existing: list[tuple[int, str]] = []
            for record, pool in zip(chunk, pools[start:start + 20], strict=True):
                for similar in sorted(pool, key=lambda s: -s.cosine):
                    if (similar.cosine < self._thresholds.related or similar.record.hash == record.hash
                            or similar.record.scope != record.scope):
                        continue  # a fact is reconciled within its scope only, by the model as by the rules
                    if similar.record.id not in alias_of and len(existing) < 30:
                        alias_of[similar.record.id] = len(existing) + 1
                        existing.append((len(existing) + 1, similar.record.text))
            if not existing:
                continue
            aliases = {alias: record_id for record_id, alias in alias_of.items()}
            count = len(chunk)
            parsed = ask_structured(
                self._llm(),
                build_reconcile_messages([r.text for r in chunk], existing),
                reconcile_schema(),
                lambda payload, count=count, aliases=aliases: parse_reconcile(  # type: ignore[misc]
                    payload, count=count, aliases=aliases),
                on_call=lambda: self._stats.add_llm_call("reconcile"),
                on_failure=lambda exc: self._stats.bump("llm_failures"),
                purpose="reconcile",
            )
            if parsed is None:
                self._stats.bump("llm_fallbacks")
                log.warning("LLM reconciliation failed twice; the conservative rules decide instead")
                continue
            for index, decision in parsed.items():
                decisions[chunk[index].id] = decision
        return decisions

    def _merge_duplicate(self, twin: MemoryRecord, incoming: MemoryRecord, *, actor: str,
                         reason: str = "the same statement was remembered again",
                         retry: bool = True) -> MemoryRecord | None:
        """The same statement again. Returns the record that stands for it, or None when the
        incoming statement must be stored as a record of its own."""
        if twin.state == "invalid":
            return None  # said again after it was invalidated: a new fact, not a revival
        if twin.private != incoming.private or (twin.private and twin.source != incoming.source):
            return None  # merging across privacy would serve one source's fact to another, or hide it
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
        if incoming.text != twin.text:
            reason = f"{reason}: {incoming.text!r}"
        try:
            self._records.update(twin, updated, action="merge", actor=actor, reason=reason, reembed=False)
        except ConcurrentChangeError as changed:
            # The twin changed since it was read (invalidated, say, while an LLM reconciled): merge
            # into what is stored now, or store the statement as its own record.
            if changed.current is None or not retry:
                return None
            return self._merge_duplicate(changed.current, incoming, actor=actor, reason=reason, retry=False)
        return updated

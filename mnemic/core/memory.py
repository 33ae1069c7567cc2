"""`Memory`: per-user facts with provenance, lifecycle, hybrid recall and an audit trail, on Chroma.

This is the public facade. It opens the store and wires the components, each with one job and
only the parts it needs: `intake` (checking and screening input, building records),
`conversations` (observe, memorize), `serving` (recall, profile, get, list, history),
`changes` (update, invalidate, confirm, delete, forget, reset, retain), `organisation` (scopes,
tree, info), `lexical_sync` (the keyword index kept in line with Chroma), `notes` and
`knowledge`; writes go through `write_pipeline` and `record_writer`.

Write order, everywhere: history entry → Chroma record → lexical index. Chroma is the truth; the
history entry names the version it produces (so a crash before the record lands leaves an entry
that `history()` knows was never applied), and the lexical index is a cache repaired on open.
Every read re-checks ownership, state and expiry on records fetched from Chroma itself.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import logging
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .changes import UNSET, RecordChanges, RetainedRegistry
from .codec import NEVER
from .conversations import Conversations
from .embeddings import Embedder, reading_whole_texts, resolve_embedder
from .erasures import ErasureGuard, erasure_order
from .gate import OpenGate
from .history import HistoryEntry, HistoryLog
from .identity import recognise
from .intake import Intake
from .knowledge import KnowledgeStore
from .lexical import LexicalIndex
from .lexical_sync import LexicalSync
from .local_db import LocalDatabase
from .local_history import LocalHistory
from .lock import acquire_store_lock
from .namespace_policy import NamespacePolicy
from .notes import NoteStore
from .opening import check_opening
from .organisation import Organisation
from .policy import EffectivePolicy, MemoryPolicy, coerce_policy
from .queued_writes import QueuedWrites
from .ranking import RecallWeights
from .recall import RecallPipeline
from .reconcile import thresholds_for
from .record_writer import RecordWriter
from .records import MemoryMatch, MemoryRecord
from .recovery import Recovery
from .retention import ErasableState, ErasureReport, RetainedPlace
from .runs import RunLog
from .scopes import ROOT
from .scrub import Scrubber
from .serving import RecordReader
from .stats import WriteStats
from .store import ChromaStore, KnowledgeCollection, RunCollection, database_identity, make_persistent_client
from .store.history import ChromaHistory
from .validation import MAX_TEXT_CHARS, check_flag, check_items, check_user_id, scope_paths
from .views import MemoryView
from .write_journal import WriteJournal
from .write_pipeline import WritePipeline
from .writer import BackgroundWriteError, BackgroundWriter

log = logging.getLogger("mnemic")
# What remember_many() passes on to the intake (remember()'s options), named in its own errors.
_REMEMBER_MANY_OPTIONS = frozenset(inspect.signature(Intake.prepare).parameters) - {"self", "texts", "policy", "call"}

class Memory:
    """Long-term memory for agents. See the README for a tour.

    `Memory("./.mnemic")` opens (or creates) an embedded store; `Memory(client=chromadb.HttpClient(...))`
    uses a Chroma server; `Memory()` is a private temporary store removed on `close()`.

    `llm=` (a litellm model string, a LangChain chat model, a CrewAI LLM, or any callable
    `(messages, schema) -> str | dict`) distils turns into facts and reconciles them; without one,
    deterministic rules do both. Recall never
    calls it. `policy=` (a MemoryPolicy, a dict of its fields, or a mode name) is stored as the
    namespace's memory policy; without it the stored one applies (explicit when none was stored).
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
        weights: RecallWeights | Mapping[str, Any] | None = None,
        lexical_path: str | Path | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
    ) -> None:
        # Checked before the store is opened, so bad arguments leave nothing locked.
        opening = check_opening(path=path, namespace=namespace, client=client, llm=llm, policy=policy,
                                weights=weights, lexical_path=lexical_path, max_text_chars=max_text_chars)
        path, lexical_path, max_text_chars = opening.path, opening.lexical_path, opening.max_text_chars
        checked_llm, initial_policy = opening.llm, opening.policy
        self.namespace = opening.namespace
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
            self._own_client: Any | None = client
        else:
            self.path = None
            lexical_file = Path(lexical_path) if lexical_path is not None else None
            self.mode = "client"
            self._own_client = None  # the caller's client: theirs to close
        self.embedder: Embedder = reading_whole_texts(resolve_embedder(embedder))
        self.llm = checked_llm
        self.weights = opening.weights
        self._max_text_chars = max_text_chars
        self.stats = WriteStats()
        self._gate = OpenGate()
        self._store = ChromaStore(client, self.namespace,
                                  cache_scope=self._lock_handle.hold if self._lock_handle is not None else None)
        try:
            self._open(client, lexical_file, max_text_chars, initial_policy)
        except BaseException as error:
            self._release_after_failed_open()
            local: LocalDatabase | None = getattr(self, "_local", None)
            explained = local.explained(error) if local is not None else None
            if explained is not None:  # a damaged file met past its first read
                raise explained from error
            raise

    def _release_after_failed_open(self) -> None:
        """What a failed open took, given back: a retry (or another process) finds nothing locked."""
        for part in ("_writer", "_recall", "_local"):
            with contextlib.suppress(Exception):
                if hasattr(self, part):
                    getattr(self, part).close()
        self._release_store()

    def _release_store(self) -> None:
        """Close the client this object made, let go of the path's lock, remove a temporary store."""
        if self._own_client is not None:
            # Chroma keeps one system per path for the whole process until its clients close: a
            # store deleted and made again at the same path would otherwise reach the old one.
            with contextlib.suppress(Exception):
                self._own_client.close()
        if self._lock_handle is not None:
            self._lock_handle.release()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)

    def _open(self, client: Any, lexical_file: Path | None, max_text_chars: int,
              initial_policy: MemoryPolicy | None) -> None:
        self._store.check_embedder(self.embedder.name, int(self.embedder.dimension))
        # The local database: keyword index, the audit trail of an embedded store, the write journal.
        self._local = LocalDatabase(lexical_file, audit_trail=self.mode == "embedded")
        self._lexical = LexicalIndex(self._local, namespace=self.namespace)
        self._intake = Intake(namespace=self.namespace, stats=self.stats, max_text_chars=max_text_chars)
        embed = lambda texts: self.embedder.embed(texts)  # noqa: E731 - the embedder may be swapped
        history: HistoryLog = (LocalHistory(self._local, self.namespace) if self.mode == "embedded"
                               else ChromaHistory(self._store))
        scrubber = Scrubber(self._store, self._lexical, embed, self.path / "chroma" if self.path is not None else None)
        self._scrubber = scrubber
        self._records = RecordWriter(self._store, self._lexical, history, self._local, embed,
                                     sole_writer=self.mode == "embedded", scrubber=scrubber,
                                     admit=self._intake.admit)
        self._writer = BackgroundWriter(must_not_hold=self._records.lock.held)
        self._erasures = ErasureGuard(self._store, erasure_order(database_identity(client), self.namespace),
                                      other_processes=self.mode != "embedded", erase=self._erase_late)
        self._wire()
        self._recovery = Recovery(
            store=self._store, local=self._local, sync=self._sync, namespace=self.namespace, embed=embed,
            dimension=lambda: int(self.embedder.dimension),
            local_history=history if isinstance(history, LocalHistory) else None, also=self._full_check)
        self._recovery.on_open()
        self._queued = QueuedWrites(WriteJournal(self._local, self.namespace), self._writer, self._pipeline,
                                    self._records, self._erasures, admit=self._intake.admit)
        self._queued.replay()
        if initial_policy is not None:
            self.set_policy(initial_policy)

    def _erase_late(self, user_id: str, ids: builtins.list[str]) -> None:
        """Erase records of a user written after the user's erasure by another process (server mode)."""
        if ids:
            self._changes.forget(user_id=user_id, scope=None, categories=None, older_than=None, ids=ids,
                                 actor="erasure")

    def _wire(self) -> None:
        """Build the components, each with the parts it needs. The embedder, LLM and weights are
        handed over as getters: they are this object's public attributes, and may be swapped."""
        embedder, llm, weights = (lambda: self.embedder), (lambda: self.llm), (lambda: self.weights)
        store, lexical, records, writer = self._store, self._lexical, self._records, self._writer
        single_writer = self.mode == "embedded"
        self._policy = NamespacePolicy(store, self.namespace, records.lock)
        self._sync = LexicalSync(store, lexical, records, single_writer=single_writer)
        self._pipeline = WritePipeline(records, thresholds_for(self.embedder.name), embedder=embedder, llm=llm,
                                       stats=self.stats)
        self._conversations = Conversations(
            store=store, records=records, writer=writer, pipeline=self._pipeline, intake=self._intake,
            policy=self._policy, stats=self.stats, llm=llm, embedder=embedder, erasures=self._erasures)
        self._recall = RecallPipeline(store, lexical, weights, records.decode,
                                      embed=lambda text: self.embedder.embed([text])[0])
        self._reader = RecordReader(
            namespace=self.namespace, store=store, lexical=lexical, records=records, writer=writer,
            recall=self._recall, sync=self._sync, owner=self._intake.owner, max_text_chars=self.max_text_chars)
        # What runs of agent teams produced (kickoff outputs, kept for replay), in the namespace's
        # Chroma database: every process of a deployment sees them, and every process erases them.
        self.runs = RunLog(RunCollection(store.client, self.namespace, check_open=self._gate.check),
                           on_secrets=self.stats.add_secrets,
                           on_erased=self._scrubber.runs_erased)
        self._retained = RetainedRegistry(store, built_in=[self.runs])
        self._changes = RecordChanges(store=store, lexical=lexical, records=records, writer=writer,
                                      reader=self._reader, retained=self._retained, runs=self.runs,
                                      max_text_chars=self.max_text_chars,
                                      refuse_secrets=self._intake.refuse_secret_fields,
                                      erasures=self._erasures)
        self._organisation = Organisation(self._reader.list, namespace=self.namespace, mode=self.mode,
                                          embedder=embedder)
        self._notes = NoteStore(
            namespace=self.namespace, gate=self._gate, policy=self._policy, store=store, records=records,
            lexical=lexical, sync=self._sync, stats=self.stats, embedder=embedder, weights=weights,
            users=self.users, max_text_chars=self.max_text_chars)
        self._knowledge_store: KnowledgeStore | None = None
        self._knowledge_lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        # An exception already on its way out says more than a failed queued write would.
        self.close(report_failures=exc is None)

    def close(self, *, report_failures: bool = True) -> None:
        """Finish queued writes and release the store (and its process lock).

        Raises BackgroundWriteError afterwards if a queued write failed and was never reported.
        """
        if self._gate.closed:
            return
        self._writer.close()
        self._recall.close()
        self._recovery.on_close()
        self._lexical.close()
        self._local.close()
        self._gate.close()
        self._release_store()
        failures = self._writer.take_failures()
        if failures and report_failures:
            raise BackgroundWriteError(failures)

    def drain_writes(self, timeout: float | None = None) -> None:
        """Wait for every write queued so far (`remember_many`, `observe`) to be stored.

        Raises BackgroundWriteError if one of them failed since the last report, naming what was
        lost and why; the Memory stays usable and each failure is reported once.
        """
        self._writer.drain(timeout)
        failures = self._writer.take_failures()
        if failures:
            raise BackgroundWriteError(failures)

    def wait_for_writes(self, timeout: float | None = None) -> None:
        """Wait for every write queued so far, without reporting failures (a read barrier).

        Reads call this so a recall sees what was queued before it; failures stay for
        `drain_writes()` or `close()` to report.
        """
        self._writer.drain(timeout)

    @property
    def max_text_chars(self) -> int:
        """The longest statement (and query) accepted, in characters; set when the Memory is opened."""
        return self._max_text_chars

    @property
    def anonymous_user_id(self) -> str:
        """The user id calls with `user_id=None` act for: bound to this Memory object, never shared."""
        return self._intake.anonymous_user_id

    # -- policy -----------------------------------------------------------------------------------

    @property
    def policy(self) -> MemoryPolicy:
        """The memory policy in force for this namespace (`effective_policy()` also says where from)."""
        return self.effective_policy().policy

    @policy.setter
    def policy(self, value: MemoryPolicy | Mapping[str, Any] | str) -> None:
        """`memory.policy = MemoryPolicy(...)` (or a dict, or a mode name) replaces the stored policy."""
        self.set_policy(coerce_policy(value))

    def effective_policy(self, *, user_id: str | None = None) -> EffectivePolicy:
        """The policy in force and its source: `stored` for the namespace, or `default` (explicit)
        when none was ever stored. Read from the store each time, so a change made by another
        process applies here too. Policies are per namespace; `user_id` is accepted (and ignored)
        so that adapters can pass the caller's context."""
        self._gate.check()
        return self._policy.effective()

    def set_policy(self, policy: MemoryPolicy | Mapping[str, Any] | str | None = None, /,
                   **changes: Any) -> EffectivePolicy:
        """Store the namespace's memory policy; it applies at once and survives restarts.

        `set_policy(mode="auto")` changes only the fields given, the others keep their value;
        `set_policy(MemoryPolicy(...))` (or a dict, or a mode name) replaces the whole policy.
        """
        self._gate.check()
        return self._policy.store(policy, changes)

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
        """Store one statement for `user_id`, as written, and return its record.

        Returns the existing record when it says the same thing (merged, never a second copy), and
        None when safety refused it (see `stats`): a secret, always; a sensitive category the policy
        excludes, when the model stored it (`source_kind="remember_tool"`). A contradicted older
        fact is invalidated and linked to this one. Raises PolicyError when the namespace's memory
        mode is off, and SecretRefusedError (a ValueError naming the field) when a field other than
        the text (metadata, source, session_id, categories, scope, actor) holds a secret: nothing
        is written. `ttl_seconds=None` uses the policy's. `created_at` (default now) dates the fact:
        a datetime from 1900 to 8999, a naive one read as UTC; the record carries it in UTC.
        """
        self._gate.check()
        policy = self._policy.require_writes("remember()")
        prepared = self._intake.prepare(
            [text], policy=policy, user_id=user_id, scope=scope, categories=categories, importance=importance,
            author=author, source_kind=source_kind, session_id=session_id, turn=turn, private=private,
            source=source, metadata=metadata, ttl_seconds=ttl_seconds, kind=kind, created_at=created_at,
            actor=actor,
        )
        who = self._intake.actor(actor, author)
        if not prepared:
            return None
        self._writer.drain()
        stored = self._pipeline.persist_new(prepared, actor=who)
        return stored[0] if stored else None

    def remember_many(self, texts: Iterable[str], **options: Any) -> builtins.list[str]:
        """Queue statements for the background writer and return at once.

        Takes the options of `remember()`. Input is checked now (bad input raises here, nothing is
        queued), and so is safety: refused statements are dropped and counted. Returns the ids the
        accepted statements' records will have (a statement merged into an existing record keeps
        that record's id instead).
        """
        self._gate.check()
        items = check_items(texts, name="remember_many()'s texts", what="a list of statements (strings)",
                            example="remember_many([record['text']], user_id=record['user_id'])")
        if not items:
            return []
        unknown = sorted(set(options) - _REMEMBER_MANY_OPTIONS)
        if unknown:
            raise TypeError(f"remember_many() got unknown option(s) {', '.join(unknown)}; it takes the options of "
                            f"remember(): {', '.join(sorted(_REMEMBER_MANY_OPTIONS))}")
        policy = self._policy.require_writes("remember_many()")
        actor = options.pop("actor", None)
        if actor is not None:
            actor = self._intake.actor(actor, "")
        prepared = self._intake.prepare(items, policy=policy, actor=actor, call="remember_many()", **options)
        if not prepared:
            return []
        prepared = self._pipeline.with_usable_ids(prepared)
        self._queued.submit(prepared, actor=actor or prepared[0].author)
        return [r.id for r in prepared]

    # -- conversations ----------------------------------------------------------------------------

    def observe(self, messages: Any, *, user_id: str | None, session_id: str | None = None,
                turn: int | None = None, memory: bool = True, scope: str | None = None,
                metadata: dict[str, Any] | None = None, task: str | None = None,
                agent_llm: Any = None) -> None:
        """Hand memory a finished turn and return at once; the caller is never delayed.

        Under policy mode `auto` the turn is distilled into facts in the background (one LLM call
        when an LLM is configured, the deterministic extractor otherwise); `drain_writes()` waits
        for it. Under `explicit` and `off` nothing is written; under `explicit` a turn with a
        session_id is kept in this process so that `memorize(session_id)` can commit it later.
        `memory=False` keeps this turn out of every write, including a later `memorize()`.
        Messages are dicts `{"role", "content"}` or LangChain-style objects; reasoning is dropped.
        `metadata` (provenance such as the agent or task that produced the turn) is kept on every
        fact distilled from it.

        `task` makes the turn a finished agent task: `task` is the instruction the agent was given
        (shown to the extractor, never stored), the user messages are what the user or tenant
        provided for it, and the assistant messages are the agent's result, whose statements are
        kept as facts with author "agent". `agent_llm` is the LLM the agent runs on (any kind `llm=`
        takes): it extracts this turn when this Memory has no LLM of its own, in one call.
        """
        self._gate.check()
        self._conversations.observe(messages, user_id=user_id, session_id=session_id, turn=turn, memory=memory,
                                    scope=scope, metadata=metadata, task=task, agent_llm=agent_llm)

    def extract(self, messages: Any) -> builtins.list[str]:
        """The statements `observe()` would keep from a turn under `auto`, stored nowhere.

        `messages` as `observe()` takes them, or one text (what a user said). Secrets are redacted
        before any extractor sees them; the LLM extracts when one is configured, the deterministic
        rules otherwise; the policy's topics and safety screening apply. Nothing is reconciled with
        a user's memory, and the caller waits for the answer (one LLM call at most). For frameworks
        whose memory hands extraction and storage to the application (CrewAI's `extract_memories`).
        """
        self._gate.check()
        return self._conversations.extract(messages)

    def memorize(self, session_id: str | None = None, *, user_id: str | None, messages: Any = None,
                 scope: str | None = None, timeout: float | None = None) -> builtins.list[MemoryRecord]:
        """Commit a session's facts now, and return the records that stand for them.

        With `messages`, those are the session; otherwise the turns `observe()` saw for
        `session_id` and has not committed yet. Turns observed with `memory=False` are left out
        either way. Works under `explicit` and `auto`; raises PolicyError under `off`.
        """
        self._gate.check()
        return self._conversations.memorize(session_id, user_id=user_id, messages=messages, scope=scope,
                                            timeout=timeout)

    # -- reading ----------------------------------------------------------------------------------

    def profile(self, user_id: str | None, *, limit: int = 10, scope: str | Sequence[str] | None = None,
                source: str | None = None) -> str:
        """The caller's newest servable facts as background text to place before a turn, or "".

        The text is marked "may be out of date, not instructions": put it with the conversation,
        never in the system prompt (memory is text that came from users and documents).
        """
        self._gate.check()
        return self._reader.profile(user_id, limit=limit, scope=scope, source=source)

    def recall(self, query: str, *, user_id: str | None, limit: int = 10, scope: str | Sequence[str] | None = None,
               categories: Sequence[str] | None = None, kinds: Sequence[str] | None = None,
               source: str | None = None, min_score: float = 0.0) -> builtins.list[MemoryMatch]:
        """The user's servable facts most relevant to `query`, best first, each explained.

        `kinds` narrows what is served; without it every kind but `lesson` is (lessons are read
        through `LessonStore`, never mixed into ordinary recall)."""
        self._gate.check()
        return self._reader.recall(query, user_id=user_id, limit=limit, scope=scope, categories=categories,
                                   kinds=kinds, source=source, min_score=min_score)

    def get(self, record_id: str) -> MemoryRecord:
        """A record by id, whatever its state (an operator call). Raises KeyError if unknown."""
        self._gate.check()
        return self._reader.get(record_id)

    def list(self, *, user_id: str | None = None, scope: str | Sequence[str] | None = None,
             include_invalid: bool = False, include_pending: bool = True, include_expired: bool = False,
             kinds: Sequence[str] | None = None, limit: int = 100, offset: int = 0) -> builtins.list[MemoryRecord]:
        """Records newest first. With no user_id this is the operator's view across users."""
        self._gate.check()
        return self._reader.list(user_id=user_id, scope=scope, include_invalid=include_invalid,
                                 include_pending=include_pending, include_expired=include_expired, kinds=kinds,
                                 limit=limit, offset=offset)

    def revision(self, user_id: str) -> tuple[int, float | None]:
        """A value that changes whenever this process changes the user's records: their count
        (adds, deletes, erasure) and the time of the newest indexed change (every add and update
        re-indexes its record). Lets a caller cache what it derived from them (a profile)."""
        self._gate.check()
        return self._reader.revision(user_id)

    def history(self, record_id: str) -> builtins.list[HistoryEntry]:
        """Every landed mutation of a record, oldest first (also after it was deleted)."""
        self._gate.check()
        return self._reader.history(record_id)

    # -- changing ---------------------------------------------------------------------------------

    def update(self, record_id: str, *, text: str | None = None, scope: str | None = None,
               categories: Sequence[str] | None = None, importance: float | None = None,
               private: bool | None = None, source: Any = UNSET, metadata: dict[str, Any] | None = None,
               ttl_seconds: float | None = None, actor: str = "operator", reason: str | None = None) -> MemoryRecord:
        """Change what is given and keep everything else (source, privacy, provenance)."""
        self._gate.check()
        return self._changes.update(record_id, text=text, scope=scope, categories=categories, importance=importance,
                                    private=private, source=source, metadata=metadata, ttl_seconds=ttl_seconds,
                                    actor=actor, reason=reason)

    def invalidate(self, record_id: str, *, reason: str, actor: str = "operator",
                   replaced_by: str | None = None) -> MemoryRecord:
        """Mark a fact no longer true: kept with its history, never served again."""
        self._gate.check()
        return self._changes.invalidate(record_id, reason=reason, actor=actor, replaced_by=replaced_by)

    def confirm(self, record_id: str, *, actor: str = "operator") -> MemoryRecord:
        """Let a pending fact (from a tool result or document) be served; a fact it replaces ("…is
        now Tom Baker") is retired then, as it would have been had the user said it."""
        self._gate.check()
        return self._changes.confirm(record_id, actor=actor, replacements=self._pipeline)

    def delete(self, record_id: str, *, actor: str = "operator", reason: str | None = None) -> None:
        """Remove a record for good; its history keeps a tombstone."""
        self._gate.check()
        self._changes.delete(record_id, actor=actor, reason=reason)

    def forget(self, *, user_id: str | None = None, scope: str | None = None,
               categories: Sequence[str] | None = None, older_than: Any = None, ids: Sequence[str] | None = None,
               actor: str = "operator") -> ErasureReport:
        """Erase every record matching all the given criteria; returns how many were erased.

        Erasure removes the text from the audit trail too: what remains is that a record was
        erased, when and by whom. `forget(user_id=...)` with no other criterion erases the whole
        user, so it also erases what the namespace keeps of them beside their records (checkpoints,
        kickoff outputs, flow states, threads: see `retain()`); the returned ErasureReport is the
        number of records and says how many of each other thing went. `older_than` is a datetime
        (a naive one is read as UTC, like every datetime mnemic takes), a timedelta, or seconds ago.
        """
        self._gate.check()
        if isinstance(user_id, str) and scope is None and not categories and older_than is None and ids is None:
            owner = check_user_id(user_id)  # as the records name them (" alice" is alice)
            self._queued.erase_user(owner)  # statements queued for the user (the erasure scrubs the file)
            self._conversations.erase_user(owner)  # and the turns buffered for memorize()
        return self._changes.forget(user_id=user_id, scope=scope, categories=categories, older_than=older_than,
                                    ids=ids, actor=actor)

    def retain(self, place: RetainedPlace | ErasableState) -> None:
        """Tell this namespace that `place` keeps users' data, so `forget(user_id=...)` erases it too.

        A RetainedPlace (a SQLite database or a directory of owned files) is recorded in the
        namespace's settings, so every process erases it, an operator's CLI included; any other
        object with `label` and `erase_user(user_id)` is attached to this Memory object only.
        """
        self._gate.check()
        self._retained.retain(place)

    def retained_places(self) -> builtins.list[RetainedPlace]:
        """The places on disk this namespace erases users from, besides its records."""
        self._gate.check()
        return self._retained.places()

    def reset(self) -> None:
        """Empty the whole namespace: every user's records, their history and settings."""
        self._gate.check()
        self._changes.reset()

    # -- organisation -----------------------------------------------------------------------------

    def scope(self, path: str) -> MemoryView:
        return MemoryView(self, [path], read_only=False)

    def slice(self, paths: Sequence[str], *, read_only: bool = True) -> MemoryView:
        paths = scope_paths(paths, name="slice()'s paths")
        if not paths:
            raise ValueError("slice() needs at least one scope path")
        return MemoryView(self, paths, read_only=check_flag(read_only, name="read_only"))

    def list_scopes(self, parent: str = ROOT, *, user_id: str | None = None) -> builtins.list[str]:
        """The direct child scopes of `parent` that hold records."""
        self._gate.check()
        return self._organisation.list_scopes(parent, user_id=user_id)

    def list_categories(self, *, user_id: str | None = None, scope: str | None = None) -> dict[str, int]:
        self._gate.check()
        return self._organisation.list_categories(user_id=user_id, scope=scope)

    def tree(self, *, user_id: str | None = None, scope: str | None = None) -> dict[str, Any]:
        """Nested scopes with record counts: {"count": n, "children": {"alpha": {...}}}."""
        self._gate.check()
        return self._organisation.tree(user_id=user_id, scope=scope)

    def info(self, scope: str | None = None, *, user_id: str | None = None) -> dict[str, Any]:
        self._gate.check()
        return self._organisation.info(scope, user_id=user_id)

    def users(self) -> builtins.list[str]:
        """Every user with records in this namespace (an operator call)."""
        self._gate.check()
        self._writer.drain()
        # Owners mnemic made (anonymous sessions, store namespaces) come back usable, for erasure.
        return [recognise(user_id) for user_id in self._store.users()]

    # -- notes and knowledge ----------------------------------------------------------------------

    @property
    def notes(self) -> NoteStore:
        """The namespace's keyed notes (records an application addresses by its own key, written
        as given: see notes.py); the LangGraph store is built on them."""
        self._gate.check()
        return self._notes

    @property
    def knowledge(self) -> KnowledgeStore:
        """The namespace's knowledge store, created on first use. Only operator calls write it:
        no conversation path (remember, remember_many, extraction) reaches its collection."""
        self._gate.check()
        with self._knowledge_lock:
            if self._knowledge_store is None:
                self._knowledge_store = KnowledgeStore(
                    namespace=self.namespace, client=self._store.client, lexical=self._lexical, gate=self._gate,
                    embedder=lambda: self.embedder, llm=lambda: self.llm, weights=lambda: self.weights,
                    policy=lambda **context: self.effective_policy(**context), max_text_chars=self.max_text_chars,
                    single_writer=self.mode == "embedded", refuse_secrets=self._intake.refuse_secret_fields,
                    count_secrets=self.stats.add_secrets, scrubber=self._records.scrubber)
            return self._knowledge_store

    # -- repair -----------------------------------------------------------------------------------

    def _full_check(self) -> int:
        # After a crash (and on repair()): a replacement whose retirement of the fact it replaces the
        # crash cut short retires it now, and an erasure the crash cut short is finished. The knowledge
        # store opens on first use; a namespace that ever had knowledge is checked now, before
        # anything is served. What erased records left in the files is scrubbed again.
        repaired = self._pipeline.finish_interrupted_retirements()
        if self._knowledge_store is not None or KnowledgeCollection(self._store.client, self.namespace).has_audit():
            repaired += self.knowledge.repair()
        self._scrubber.after_crash()
        return repaired

    def repair(self) -> int:
        """Check the store in full and mend it: the keyword index against every record (after a
        crash, or another process's writes), and every user's vector index, rebuilt when a query
        cannot reach some of their records. Opening a store the last process did not close does
        the same. Returns how many index entries and records were mended. Raises
        CorruptLocalDatabaseError, naming the file and how to set it aside, when a page of the
        store's local database is damaged."""
        self._gate.check()
        return self._recovery.repair()


__all__ = ["NEVER", "Memory", "MemoryView"]

"""`Memory`: per-user facts with provenance, lifecycle, hybrid recall and an audit trail, on Chroma.

Write order, everywhere: history entry → Chroma record → lexical index. Chroma is the truth; the
history entry names the version it produces (so a crash before the record lands leaves an entry
that `history()` knows was never applied), and the lexical index is a cache repaired on open.
Every read re-checks ownership, state and expiry on records fetched from Chroma itself.
"""

from __future__ import annotations

import builtins
import logging
import shutil
import tempfile
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .codec import NEVER
from .embeddings import Embedder, resolve_embedder
from .extraction import (
    ExtractedFact,
    Message,
    deterministic_extract,
    llm_extract,
    normalise_messages,
    topic_allowed,
)
from .history import HistoryEntry, applied_entries
from .lexical import LexicalIndex
from .llm import check_llm
from .lock import acquire_store_lock
from .policy import (
    POLICY_SETTING,
    EffectivePolicy,
    MemoryPolicy,
    PolicyError,
    build_policy,
    coerce_policy,
    dump_policy,
    format_profile,
    load_policy,
)
from .ranking import RecallWeights
from .recall import RecallPipeline, RecallRequest
from .reconcile import (
    Decision,
    thresholds_for,
)
from .record_writer import RecordWriter
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
from .retention import SETTING_PREFIX as RETAINED_PREFIX
from .retention import ErasableState, ErasureReport, RetainedPlace, erase_everywhere
from .safety import REDACTED, find_secrets, redact, sensitive_category
from .scopes import ROOT, ancestors, is_within, normalise_scope
from .sessions import SessionBuffer, Turn, group_turns
from .stats import WriteStats
from .store import ChromaStore, make_persistent_client
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
from .write_pipeline import WritePipeline, describe_queued
from .writer import BackgroundWriteError, BackgroundWriter

log = logging.getLogger("mnemic")

_UNSET: Any = object()
SERVER_SYNC_INTERVAL_S = 2.0
# Kinds that hold personal facts, to which the policy's sensitive-category exclusion applies
# (lessons and knowledge are not about a person).
PERSONAL_KINDS = frozenset({"fact", "note"})
# The policy's sensitive-category exclusion covers what memory decides to keep: facts it extracts
# (observe, memorize) and facts the model stores with its remember tool. A direct remember() by
# application code or an operator is a deliberate act and stores the statement as written;
# secrets are refused on every path.
SCREENED_SOURCE_KINDS = frozenset({"remember_tool"})
MAX_BUFFERED_SESSIONS = 512
MAX_PROMPT_FACTS = 15


class Memory:
    """Long-term memory for agents. See the README for a tour.

    `Memory("./.mnemic")` opens (or creates) an embedded store; `Memory(client=chromadb.HttpClient(...))`
    uses a Chroma server; `Memory()` is a private temporary store removed on `close()`.

    `llm=` (a litellm model string, or any callable `(messages, schema) -> str | dict`) distils
    turns into facts and reconciles them; without one, deterministic rules do both. Recall never
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
        weights: RecallWeights | None = None,
        lexical_path: str | Path | None = None,
        max_text_chars: int = MAX_TEXT_CHARS,
    ) -> None:
        if path is not None and client is not None:
            raise ValueError("give either path (embedded Chroma) or client (e.g. chromadb.HttpClient), not both")
        if not isinstance(namespace, str) or not namespace.strip():
            raise ValueError("namespace must be a non-empty string, e.g. the agent's name")
        # Checked before the store is opened, so bad arguments leave nothing locked.
        checked_llm = check_llm(llm)
        initial_policy = coerce_policy(policy) if policy is not None else None
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
        self.llm = checked_llm
        self.weights = weights or RecallWeights()
        self.max_text_chars = max_text_chars
        self.anonymous_user_id = f"anonymous:{uuid.uuid4().hex}"
        self._store = ChromaStore(client, self.namespace)
        self._store.check_embedder(self.embedder.name, int(self.embedder.dimension))
        self._lexical = LexicalIndex(lexical_file)
        self._records = RecordWriter(self._store, self._lexical, lambda texts: self.embedder.embed(texts))
        self._last_sync: dict[str, float] = {}
        self._closed = False
        self.stats = WriteStats()
        self._thresholds = thresholds_for(self.embedder.name)
        # Turns seen under `explicit`, per (user, session), for memorize(); touched only by the writer.
        self._sessions: OrderedDict[tuple[str, str], SessionBuffer] = OrderedDict()
        # State this process attached for erasure (e.g. a store in a Chroma collection); places on
        # disk are recorded in the namespace's settings instead, so every process erases them.
        self._attached: builtins.list[ErasableState] = []
        self._writer = BackgroundWriter()
        self._pipeline = WritePipeline(self, self._records, self._thresholds)
        self._recall = RecallPipeline(self._store, self._lexical, lambda: self.weights, self._records.decode,
                                      embed=lambda text: self.embedder.embed([text])[0])
        self.repair()
        if initial_policy is not None:
            self.set_policy(initial_policy)

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
        if self._closed:
            return
        self._writer.close()
        self._recall.close()
        self._lexical.close()
        self._closed = True
        if self._lock_handle is not None:
            self._lock_handle.release()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
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

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Memory is closed; open a new one")

    def _user(self, user_id: Any) -> str:
        if user_id is None:
            # Anonymous callers get an id bound to this Memory object's session, never a shared one.
            return self.anonymous_user_id
        return check_user_id(user_id)

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
        self._check_open()
        stored = load_policy(self._store.get_setting(POLICY_SETTING))
        if stored is None:
            return EffectivePolicy(policy=MemoryPolicy(), source="default")
        return EffectivePolicy(policy=stored, source="stored")

    def set_policy(self, policy: MemoryPolicy | Mapping[str, Any] | str | None = None, /,
                   **changes: Any) -> EffectivePolicy:
        """Store the namespace's memory policy; it applies at once and survives restarts.

        `set_policy(mode="auto")` changes only the fields given, the others keep their value;
        `set_policy(MemoryPolicy(...))` (or a dict, or a mode name) replaces the whole policy.
        """
        self._check_open()
        if policy is None and not changes:
            raise ValueError("set_policy() needs a policy or fields to change, e.g. set_policy(mode='auto')")
        base = coerce_policy(policy) if policy is not None else self.effective_policy().policy
        if changes:
            base = build_policy({**dump_policy(base), **changes}, name="set_policy()")
        with self._records.lock:
            self._store.put_setting(POLICY_SETTING, dump_policy(base))
        log.info("memory policy for namespace %r: mode=%s inject=%s", self.namespace, base.mode, base.inject)
        return EffectivePolicy(policy=base, source="stored")

    def _require_writes(self, action: str) -> MemoryPolicy:
        policy = self.effective_policy().policy
        if policy.mode == "off":
            raise PolicyError(action, mode=policy.mode, namespace=self.namespace)
        return policy

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
        mode is off. `ttl_seconds=None` uses the policy's.
        """
        self._check_open()
        policy = self._require_writes("remember()")
        prepared = self._prepare(
            [text], user_id=user_id, scope=scope, categories=categories, importance=importance,
            author=author, source_kind=source_kind, session_id=session_id, turn=turn, private=private,
            source=source, metadata=metadata, ttl_seconds=ttl_seconds, kind=kind, created_at=created_at,
            policy=policy,
        )
        if not prepared:
            return None
        self.wait_for_writes()
        stored = self._pipeline.persist_new(prepared, actor=actor or author)
        return stored[0] if stored else None

    def remember_many(self, texts: Iterable[str], **options: Any) -> builtins.list[str]:
        """Queue statements for the background writer and return at once.

        Input is checked now (bad input raises here, nothing is queued), and so is safety: refused
        statements are dropped and counted. Returns the ids the accepted statements' records will
        have (a statement merged into an existing record keeps that record's id instead).
        """
        self._check_open()
        items = builtins.list(texts) if not isinstance(texts, str) else [texts]
        if not items:
            return []
        policy = self._require_writes("remember_many()")
        actor = options.pop("actor", None)
        prepared = self._prepare(items, **options, policy=policy)
        if not prepared:
            return []
        first = prepared[0]
        self._writer.submit_batched(
            (first.kind, actor or first.author), prepared,
            lambda records: self._pipeline.persist_queued(records, actor=actor or records[0].author),
            describe_queued,
        )
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
        topic: str | None = None,
        policy: MemoryPolicy | None = None,
    ) -> builtins.list[MemoryRecord]:
        """Checked, screened records for `texts`; refused texts (secrets, excluded categories) are
        left out and counted in `stats`."""
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
        rules = policy or self.effective_policy().policy
        # An explicit ttl (0 = never) wins; otherwise the policy's applies.
        ttl = check_ttl(ttl_seconds) if ttl_seconds is not None else (rules.ttl_seconds or None)
        now = utcnow()
        return [
            self._new_record(t, owner=owner, scope=scope_path, categories=cats, importance=weight,
                             author=author, source_kind=source_kind, session=session, turn=turn_no,
                             private=private, source=origin, metadata=extra, ttl=ttl, kind=kind,
                             created_at=created_at, topic=topic, now=now)
            for t in clean_texts
            if self._passes_safety(t, kind=kind, policy=rules,
                                   screen_sensitive=source_kind in SCREENED_SOURCE_KINDS)
        ]

    def _new_record(self, text: str, *, owner: str, scope: str, categories: builtins.list[str],
                    importance: float, author: str, source_kind: str, session: str | None,
                    turn: int | None, private: bool, source: str | None, metadata: dict[str, Any],
                    ttl: float | None, kind: str, created_at: datetime | None, topic: str | None,
                    now: datetime) -> MemoryRecord:
        state = "pending" if source_kind in UNCONFIRMED_SOURCE_KINDS else "valid"
        return MemoryRecord(
            id=uuid.uuid4().hex, text=text, hash=text_hash(text), kind=kind, user_id=owner,
            namespace=self.namespace, scope=scope, categories=categories, topic=topic,
            importance=importance, author=author, source_kind=source_kind,
            session_id=session, turn=turn, state=state, created_at=created_at or now, updated_at=now,
            expires_at=now + timedelta(seconds=ttl) if ttl else None, private=private, source=source,
            metadata=metadata,
        )

    def _passes_safety(self, text: str, *, kind: str, policy: MemoryPolicy, screen_sensitive: bool) -> bool:
        """False (and counted) for a secret, whatever the policy or the path; for a sensitive
        category when the policy excludes them and the write is one memory chose to make
        (`screen_sensitive`). The text itself is never logged."""
        hits = find_secrets(text)
        if hits:
            kinds = [h.kind for h in hits]
            self.stats.add_secrets(kinds)
            log.info("refused to store a statement holding a secret (%s)", ", ".join(sorted(set(kinds))))
            return False
        if screen_sensitive and policy.exclude_sensitive and kind in PERSONAL_KINDS:
            category = sensitive_category(text)
            if category is not None:
                self.stats.add_sensitive(category)
                log.info("refused to store a statement in an excluded category (%s)", category)
                return False
        return True

    # -- conversations ----------------------------------------------------------------------------

    def observe(
        self,
        messages: Any,
        *,
        user_id: str | None,
        session_id: str | None = None,
        turn: int | None = None,
        memory: bool = True,
        scope: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Hand memory a finished turn and return at once; the caller is never delayed.

        Under policy mode `auto` the turn is distilled into facts in the background (one LLM call
        when an LLM is configured, the deterministic extractor otherwise); `drain_writes()` waits
        for it. Under `explicit` and `off` nothing is written; under `explicit` a turn with a
        session_id is kept in this process so that `memorize(session_id)` can commit it later.
        `memory=False` keeps this turn out of every write, including a later `memorize()`.
        Messages are dicts `{"role", "content"}` or LangChain-style objects; reasoning is dropped.
        `metadata` (provenance such as the agent or task that produced the turn) is kept on every
        fact distilled from it.
        """
        self._check_open()
        if not isinstance(memory, bool):
            raise TypeError(f"memory must be True or False (False keeps this turn out), got {memory!r}")
        owner = self._user(user_id)
        session = check_optional_str(session_id, name="session_id")
        turn_no = check_turn(turn)
        scope_path = normalise_scope(scope)
        captured = normalise_messages(messages)
        extra = check_metadata(metadata) or None
        self.stats.bump("turns_observed")
        self._writer.submit(
            lambda: self._observe_job(owner, session, turn_no, scope_path, captured, memory, extra),
            f"a turn of {len(captured)} message(s) for user {owner!r} from observe()")

    def _observe_job(self, owner: str, session: str | None, turn: int | None, scope: str,
                     messages: builtins.list[Message], memory: bool,
                     metadata: dict[str, Any] | None = None) -> None:
        buffer = self._session_buffer(owner, session) if session is not None else None
        if not memory:
            self.stats.bump("turns_opted_out")
            if buffer is not None:
                buffer.exclude(messages)
            return
        if not messages:
            return
        # The policy in force when the turn is handled, read from the store (another process may
        # have changed it).
        policy = self.effective_policy().policy
        if policy.mode == "auto":
            self._distil(owner, messages, policy=policy, session=session, turn=turn, scope=scope,
                         actor="extractor", metadata=metadata)
        elif policy.mode == "explicit" and buffer is not None:
            buffer.add(Turn(turn=turn, scope=scope, messages=messages, metadata=metadata))

    def memorize(
        self,
        session_id: str | None = None,
        *,
        user_id: str | None,
        messages: Any = None,
        scope: str | None = None,
        timeout: float | None = None,
    ) -> builtins.list[MemoryRecord]:
        """Commit a session's facts now, and return the records that stand for them.

        With `messages`, those are the session; otherwise the turns `observe()` saw for
        `session_id` and has not committed yet. Turns observed with `memory=False` are left out
        either way. Works under `explicit` and `auto`; raises PolicyError under `off`.
        """
        self._check_open()
        self._require_writes("memorize()")
        owner = self._user(user_id)
        session = check_optional_str(session_id, name="session_id")
        if messages is None and session is None:
            raise ValueError("memorize() needs session_id (a session observe() has seen) or messages")
        given = normalise_messages(messages) if messages is not None else None
        scope_path = normalise_scope(scope) if scope is not None else None
        future = self._writer.submit(lambda: self._memorize_job(owner, session, given, scope_path))
        outcome = future.result(timeout)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome or []

    def _memorize_job(self, owner: str, session: str | None, given: builtins.list[Message] | None,
                      scope: str | None) -> builtins.list[MemoryRecord] | BaseException:
        try:
            policy = self._require_writes("memorize()")
            buffer = self._sessions.get((owner, session)) if session is not None else None
            if given is not None:
                kept = [m for m in given if buffer is None or not buffer.excluded_message(m)]
                turns = [Turn(turn=None, scope=scope or ROOT, messages=kept)] if kept else []
            else:
                turns = buffer.uncommitted() if buffer is not None else []
                if scope is not None:
                    turns = [Turn(turn=t.turn, scope=scope, messages=t.messages, metadata=t.metadata)
                             for t in turns]
            stored: builtins.list[MemoryRecord] = []
            for group in group_turns(turns):
                stored.extend(self._distil(
                    owner, [m for t in group for m in t.messages], policy=policy, session=session,
                    turn=group[0].turn if len(group) == 1 else None, scope=group[0].scope, actor="memorize",
                    metadata=group[0].metadata))
            if given is None and buffer is not None:
                buffer.commit_all()
            return stored
        except Exception as exc:  # handed back to the waiting caller, not swallowed by the writer
            return exc

    def _session_buffer(self, owner: str, session: str) -> SessionBuffer:
        key = (owner, session)
        buffer = self._sessions.get(key)
        if buffer is None:
            buffer = self._sessions[key] = SessionBuffer()
            while len(self._sessions) > MAX_BUFFERED_SESSIONS:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(key)
        return buffer

    def _distil(self, owner: str, messages: builtins.list[Message], *, policy: MemoryPolicy,
                session: str | None, turn: int | None, scope: str, actor: str,
                metadata: dict[str, Any] | None = None) -> builtins.list[MemoryRecord]:
        """Extract, screen and persist the facts of some messages (runs on the writer thread)."""
        clean: builtins.list[Message] = []
        for message in messages:
            # Secrets leave the text before any extractor, or any provider, sees it.
            text, hits = redact(message.content)
            if hits:
                self.stats.add_secrets([h.kind for h in hits])
            clean.append(Message(role=message.role, content=text))
        if not any(m.role != "system" for m in clean):
            return []
        self.stats.bump("turns_extracted")
        facts: builtins.list[ExtractedFact] | None = None
        if self.llm is not None:
            existing, aliases = self._existing_for_prompt(owner, clean)
            facts = llm_extract(
                self.llm, clean, policy=policy, existing=existing, aliases=aliases,
                on_call=lambda: self.stats.add_llm_call("extract"),
                on_failure=lambda exc: self.stats.bump("llm_failures"),
            )
            if facts is None:
                self.stats.bump("llm_fallbacks")
                log.warning("LLM extraction failed twice; the deterministic extractor handles this turn")
        by_llm = facts is not None
        if facts is None:
            facts = deterministic_extract(clean, topics=policy.topics)
        records: builtins.list[MemoryRecord] = []
        decisions: dict[str, Decision] = {}
        ttl = policy.ttl_seconds or None
        now = utcnow()
        for fact in facts:
            if not topic_allowed(fact, policy.topics):
                self.stats.bump("off_topic_dropped")
                continue
            if REDACTED in fact.text or not fact.text.strip():
                continue  # the secret was counted when it was redacted
            text = fact.text.strip()[:self.max_text_chars]
            if not self._passes_safety(text, kind="fact", policy=policy, screen_sensitive=True):
                continue
            record = self._new_record(
                text, owner=owner, scope=scope, categories=[], importance=0.5, author=fact.author,
                source_kind="tool_result" if fact.from_tool else "conversation", session=session, turn=turn,
                private=False, source=None, metadata=dict(metadata or {}), ttl=ttl, kind="fact", created_at=None,
                topic=fact.topic, now=now)
            records.append(record)
            if by_llm:
                decisions[record.id] = Decision(fact.decision, tuple(fact.targets),
                                                fact.reason or f"LLM decided {fact.decision}", by="llm")
        self.stats.bump("facts_extracted", len(records))
        if not records:
            return []
        label = f"{actor} (llm)" if by_llm else f"{actor} (rules)"
        return self._pipeline.persist_new(records, actor=label, decisions=decisions if by_llm else None, use_llm=False)

    def _existing_for_prompt(self, owner: str, messages: builtins.list[Message]
                             ) -> tuple[builtins.list[tuple[int, str]], dict[int, str]]:
        """The user's facts nearest to the turn, under small aliases (the model never sees ids)."""
        total = self._store.count(owner)
        if total == 0:
            return [], {}
        chosen: builtins.list[MemoryRecord] = []
        if total <= MAX_PROMPT_FACTS:
            # Few enough to show them all: no embedding, and nothing related can be missed.
            now = utcnow()
            chosen = sorted((r for r in map(self._records.decode, self._store.get(owner))
                             if r.user_id == owner and r.state != "invalid" and not r.is_expired(now)
                             and r.kind == "fact"),
                            key=lambda r: r.created_at)
        else:
            texts = [m.content[:1000] for m in messages if m.role != "system"][-6:]
            best: dict[str, tuple[float, MemoryRecord]] = {}
            for vector in self.embedder.embed(texts):
                for similar in self._pipeline.similar(owner, vector, kind="fact", k=8):
                    known = best.get(similar.record.id)
                    if known is None or similar.cosine > known[0]:
                        best[similar.record.id] = (similar.cosine, similar.record)
            chosen = [record for _, record in sorted(best.values(), key=lambda pair: -pair[0])[:MAX_PROMPT_FACTS]]
        existing = [(alias, record.text) for alias, record in enumerate(chosen, start=1)]
        aliases = {alias: record.id for alias, record in enumerate(chosen, start=1)}
        return existing, aliases

    def profile(self, user_id: str | None, *, limit: int = 10, scope: str | Sequence[str] | None = None,
                source: str | None = None) -> str:
        """The caller's newest servable facts as background text to place before a turn, or "".

        The text is marked "may be out of date, not instructions": put it with the conversation,
        never in the system prompt (memory is text that came from users and documents).
        """
        self._check_open()
        owner = self._user(user_id)
        limit = check_limit(limit, maximum=200)
        scopes = self._scopes(scope)
        now = utcnow()
        chosen: builtins.list[MemoryRecord] = []
        for record in self.list(user_id=owner, scope=scopes, include_pending=False, kinds=["fact", "note"],
                                limit=100_000):
            if self._may_serve(record, owner=owner, scopes=scopes, categories=[], kinds=[], source=source,
                               now=now):
                chosen.append(record)
                if len(chosen) >= limit:
                    break
        return format_profile(chosen)

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
    ) -> builtins.list[MemoryMatch]:
        """The user's servable facts most relevant to `query`, best first, each explained."""
        self._check_open()
        query_text = check_text(query, name="query", max_chars=self.max_text_chars)
        owner = self._user(user_id)
        limit = check_limit(limit)
        scopes = self._scopes(scope)
        cats = check_categories(categories)
        kind_list = [check_choice(k, name="kinds", choices=KINDS) for k in (kinds or [])]
        self.wait_for_writes()
        self._maybe_sync(owner)
        now = utcnow()

        def servable(record: MemoryRecord) -> bool:
            return self._may_serve(record, owner=owner, scopes=scopes, categories=cats, kinds=kind_list,
                                   source=source, now=now)

        return self._recall.run(RecallRequest(
            query=query_text, owner=owner, limit=limit, min_score=min_score, now=now, servable=servable,
        ))

    def _scopes(self, scope: str | Sequence[str] | None) -> builtins.list[str]:
        if scope is None:
            return [ROOT]
        if isinstance(scope, str):
            return [normalise_scope(scope)]
        return [normalise_scope(s) for s in scope] or [ROOT]

    @staticmethod
    def _may_serve(record: MemoryRecord, *, owner: str, scopes: builtins.list[str], categories: builtins.list[str],
                   kinds: builtins.list[str], source: str | None, now: datetime) -> bool:
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

    def get(self, record_id: str) -> MemoryRecord:
        """A record by id, whatever its state (an operator call). Raises KeyError if unknown."""
        self._check_open()
        (record_id,) = check_ids([record_id])
        self.wait_for_writes()
        found = self._locate(record_id)
        if found is None:
            raise KeyError(f"no memory with id {record_id!r} in namespace {self.namespace!r}")
        return found

    def _locate(self, record_id: str) -> MemoryRecord | None:
        hint = self._lexical.collection_of(record_id)
        if hint is not None:
            row = self._store.get_in(hint, record_id)
            if row is not None:
                return self._records.decode(row)
        for user_id in self._store.users():
            rows = self._store.get(user_id, ids=[record_id])
            if rows:
                return self._records.decode(rows[0])
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
    ) -> builtins.list[MemoryRecord]:
        """Records newest first. With no user_id this is the operator's view across users."""
        self._check_open()
        limit = check_limit(limit, maximum=100_000)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative integer, got {offset!r}")
        scopes = self._scopes(scope)
        kind_list = [check_choice(k, name="kinds", choices=KINDS) for k in (kinds or [])]
        self.wait_for_writes()
        users = [check_user_id(user_id)] if user_id is not None else self._store.users()
        now = utcnow()
        records = []
        for owner in users:
            for row in self._store.iterate(owner, where=self._list_where(scopes)):
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

    @staticmethod
    def _list_where(scopes: builtins.list[str]) -> dict[str, Any] | None:
        clauses = [{"scope_path": {"$contains": s}} for s in scopes if s != ROOT]
        if ROOT in scopes or not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$or": clauses}

    def revision(self, user_id: str) -> tuple[int, float | None]:
        """A value that changes whenever this process changes the user's records: their count
        (adds, deletes, erasure) and the time of the newest indexed change (every add and update
        re-indexes its record). Lets a caller cache what it derived from them (a profile)."""
        self._check_open()
        owner = check_user_id(user_id)
        return self._store.count(owner), self._lexical.watermark(self._store.collection_name(owner))

    def history(self, record_id: str) -> builtins.list[HistoryEntry]:
        """Every landed mutation of a record, oldest first (also after it was deleted)."""
        self._check_open()
        (record_id,) = check_ids([record_id])
        self.wait_for_writes()
        raw = self._store.history_for(record_id)
        if not raw:
            raise KeyError(f"no memory with id {record_id!r} has any history in namespace {self.namespace!r}")
        current = self._locate(record_id)
        applied = applied_entries(raw, current.version if current is not None else None)
        if not applied:
            raise KeyError(f"no memory with id {record_id!r} in namespace {self.namespace!r}")
        return applied

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
        with self._records.lock:
            before = self.get(record_id)
            after = before.model_copy(update={**changes, "updated_at": utcnow(), "version": before.version + 1})
            after = MemoryRecord.model_validate(after.model_dump())
            self._records.update(before, after, action="update", actor=actor, reason=reason,
                               reembed="text" in changes and changes["text"] != before.text)
            return after

    def invalidate(self, record_id: str, *, reason: str, actor: str = "operator",
                   replaced_by: str | None = None) -> MemoryRecord:
        """Mark a fact no longer true: kept with its history, never served again."""
        self._check_open()
        reason_text = check_text(reason, name="reason", max_chars=2000)
        with self._records.lock:
            before = self.get(record_id)
            if replaced_by is not None:
                self.get(replaced_by)
            after = before.model_copy(update={
                "state": "invalid", "invalid_reason": reason_text, "invalidated_by": replaced_by,
                "updated_at": utcnow(), "version": before.version + 1,
            })
            self._records.update(before, after, action="invalidate", actor=actor, reason=reason_text,
                               reembed=False)
            return after

    def confirm(self, record_id: str, *, actor: str = "operator") -> MemoryRecord:
        """Let a pending fact (from a tool result or document) be served."""
        self._check_open()
        with self._records.lock:
            before = self.get(record_id)
            if before.state == "invalid":
                raise ValueError(f"memory {record_id} is invalid ({before.invalid_reason}); it cannot be confirmed")
            if before.state == "valid":
                return before
            after = before.model_copy(update={"state": "valid", "updated_at": utcnow(),
                                              "version": before.version + 1})
            self._records.update(before, after, action="confirm", actor=actor, reason=None, reembed=False)
            return after

    def delete(self, record_id: str, *, actor: str = "operator", reason: str | None = None) -> None:
        """Remove a record for good; its history keeps a tombstone."""
        self._check_open()
        with self._records.lock:
            self._records.remove(self.get(record_id), actor=actor, reason=reason)

    def forget(
        self,
        *,
        user_id: str | None = None,
        scope: str | None = None,
        categories: Sequence[str] | None = None,
        older_than: Any = None,
        ids: Sequence[str] | None = None,
        actor: str = "operator",
    ) -> ErasureReport:
        """Erase every record matching all the given criteria; returns how many were erased.

        Erasure removes the text from the audit trail too: what remains is that a record was
        erased, when and by whom. `forget(user_id=...)` with no other criterion erases the whole
        user, so it also erases what the namespace keeps of them beside their records (checkpoints,
        kickoff outputs, flow states, threads: see `retain()`); the returned ErasureReport is the
        number of records and says how many of each other thing went.
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
        self.wait_for_writes()
        users = [owner] if owner is not None else self._store.users()
        erased = 0
        with self._records.lock:
            for who in users:
                doomed = []
                for row in self._store.iterate(who, where=self._list_where(scopes)):
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
                erased += self._records.erase(who, doomed, actor=actor)
        whole_user = owner is not None and scope is None and not cats and cutoff is None and id_set is None
        if not whole_user:
            return ErasureReport(erased)
        assert owner is not None
        return ErasureReport(erased, erase_everywhere([*self.retained_places(), *self._attached], owner))

    def retain(self, place: RetainedPlace | ErasableState) -> None:
        """Tell this namespace that `place` keeps users' data, so `forget(user_id=...)` erases it too.

        A RetainedPlace (a SQLite database or a directory of owned files) is recorded in the
        namespace's settings, so every process erases it, an operator's CLI included; any other
        object with `label` and `erase_user(user_id)` is attached to this Memory object only.
        """
        self._check_open()
        if isinstance(place, RetainedPlace):
            if self._store.get_setting(place.key) is None:
                self._store.put_setting(place.key, place.to_setting())
            return
        if not isinstance(place, ErasableState):
            raise TypeError("retain() takes a RetainedPlace or an object with label and erase_user(user_id)")
        if all(existing is not place for existing in self._attached):
            self._attached.append(place)

    def retained_places(self) -> builtins.list[RetainedPlace]:
        """The places on disk this namespace erases users from, besides its records."""
        self._check_open()
        return [RetainedPlace.from_setting(value)
                for _, value in sorted(self._store.settings(RETAINED_PREFIX).items())]

    def reset(self) -> None:
        """Empty the whole namespace: every user's records, their history and settings."""
        self._check_open()
        self.wait_for_writes()
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
            for key, value in kept.items():
                self._store.put_setting(key, value)

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

    def list_scopes(self, parent: str = ROOT, *, user_id: str | None = None) -> builtins.list[str]:
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

    def users(self) -> builtins.list[str]:
        """Every user with records in this namespace (an operator call)."""
        self._check_open()
        self.wait_for_writes()
        return self._store.users()

    # -- knowledge (operator-written, read by every user; see knowledge.py) ---------------------

    @property
    def knowledge(self) -> KnowledgeStore:
        """The namespace's knowledge store, created on first use. Only operator calls write it:
        no conversation path (remember, remember_many, extraction) reaches its collection."""
        self._check_open()
        store: KnowledgeStore | None = getattr(self, "_knowledge_store", None)
        if store is None:
            with self._records.lock:
                store = getattr(self, "_knowledge_store", None)
                if store is None:
                    store = KnowledgeStore(self)
                    self._knowledge_store = store
        return store

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
            rows = self._store.iterate(user_id, where={"updated_at": {"$gte": watermark - 1.0}})
            records = [self._records.decode(row) for row in rows]
            stale_ids: builtins.list[str] = []
        else:
            records = [self._records.decode(row) for row in self._store.iterate(user_id)]
            present = {r.id for r in records}
            stale_ids = [rid for rid in indexed if rid not in present]
        todo = [r for r in records if indexed.get(r.id) != r.version]
        if stale_ids:
            self._lexical.delete(stale_ids)
        self._records.index(todo)
        if records:
            self._lexical.set_watermark(collection, max(r.updated_at.timestamp() for r in records))
        elif watermark is None:
            self._lexical.set_watermark(collection, 0.0)
        return len(todo) + len(stale_ids)


# Imported late: views call back into Memory.
from .knowledge import KnowledgeStore  # noqa: E402
from .views import MemoryView  # noqa: E402

__all__ = ["NEVER", "Memory", "MemoryView"]

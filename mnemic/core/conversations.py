"""Conversations: finished turns handed over by `observe()` and committed by `memorize()`.

Under policy mode `auto` every observed turn is distilled into facts on the background writer;
under `explicit` the turns of a session wait in this process (bounded, newest sessions kept)
until `memorize()` commits them. Distillation redacts secrets before any extractor or provider
sees the text, extracts (the LLM when configured, deterministic rules otherwise), screens what it
extracted, and hands the records to the write pipeline. Buffers are touched only by the writer
thread, so they need no lock of their own.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .embeddings import Embedder
from .erasures import ErasureGuard
from .extraction import (
    MAX_MESSAGE_CHARS,
    ExtractedFact,
    Message,
    deterministic_extract,
    llm_extract,
    normalise_messages,
    task_extract,
    topic_allowed,
)
from .identity import user_label
from .intake import Intake
from .llm import check_llm
from .namespace_policy import NamespacePolicy
from .policy import MemoryPolicy
from .reconcile import Decision
from .record_writer import RecordWriter
from .records import MemoryRecord, utcnow
from .safety import CUT_MARGIN, REDACTED, redact, secret_fields
from .scopes import ROOT, normalise_scope
from .sessions import SessionBuffer, Turn, group_turns
from .stats import WriteStats
from .store import ChromaStore
from .validation import check_metadata, check_optional_str, check_turn, scrub
from .write_pipeline import WritePipeline
from .writer import BackgroundWriter

log = logging.getLogger("mnemic")

MAX_BUFFERED_SESSIONS = 512
MAX_PROMPT_FACTS = 15


def _task_text(task: Any) -> str | None:
    """A task's instruction as the extractor is shown it (cut like a message), None when empty."""
    if task is None:
        return None
    if not isinstance(task, str):
        raise TypeError(f"task must be the instruction the agent was given, as a string, got {type(task).__name__}")
    return scrub(task).strip()[:MAX_MESSAGE_CHARS + CUT_MARGIN] or None  # cut to the limit once redacted


class Conversations:
    def __init__(self, *, store: ChromaStore, records: RecordWriter, writer: BackgroundWriter,
                 pipeline: WritePipeline, intake: Intake, policy: NamespacePolicy, stats: WriteStats,
                 llm: Callable[[], Any], embedder: Callable[[], Embedder], erasures: ErasureGuard) -> None:
        self._store = store
        self._erasures = erasures
        self._records = records
        self._writer = writer
        self._pipeline = pipeline
        self._intake = intake
        self._policy = policy
        self._stats = stats
        self._llm = llm  # read per turn: the owner may swap its LLM at any time
        self._embedder = embedder
        # Turns seen under `explicit`, per (user, session), for memorize(); touched only by the writer.
        self._sessions: OrderedDict[tuple[str, str], SessionBuffer] = OrderedDict()
        self._explained: set[str] = set()  # what the log was told once (why nothing was stored...)

    def observe(self, messages: Any, *, user_id: str | None, session_id: str | None, turn: int | None,
                memory: bool, scope: str | None, metadata: dict[str, Any] | None, task: str | None = None,
                agent_llm: Any = None) -> None:
        if not isinstance(memory, bool):
            raise TypeError(f"memory must be True or False (False keeps this turn out), got {memory!r}")
        owner = self._intake.writer(user_id, call="observe()")
        session = check_optional_str(session_id, name="session_id")
        turn_no = check_turn(turn)
        scope_path = normalise_scope(scope)
        captured = normalise_messages(messages)
        # Fields given with the turn land on every fact distilled from it: screened now, before
        # anything is queued. The messages themselves are redacted when the turn is distilled.
        self._intake.refuse_secret_fields("this observe()", session_id=session, scope=scope)
        extra = self._without_secrets(check_metadata(metadata)) or None
        instruction = _task_text(task)
        borrowed = check_llm(agent_llm)
        self._stats.bump("turns_observed")
        accepted = time.time()
        self._writer.submit(
            lambda: self._observe_job(owner, session, turn_no, scope_path, captured, memory, extra,
                                      task=instruction, agent_llm=borrowed, accepted_at=accepted),
            f"a turn of {len(captured)} message(s) for {user_label(owner)} from observe()")

    def _without_secrets(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """Provenance metadata minus any entry holding a secret (counted, logged without it): an
        observed turn is never refused for what an adapter attached to it."""
        found = secret_fields({key: {key: value} for key, value in metadata.items()})
        if found:
            self._stats.add_secrets([kind for kinds in found.values() for kind in kinds])
            log.info("dropped %d metadata entr(y/ies) holding a secret from an observed turn", len(found))
        return {key: value for key, value in metadata.items() if key not in found}

    def _observe_job(self, owner: str, session: str | None, turn: int | None, scope: str,
                     messages: list[Message], memory: bool, metadata: dict[str, Any] | None = None, *,
                     task: str | None = None, agent_llm: Any = None, accepted_at: float) -> None:
        if self._erasures.erased_since(owner, accepted_at):
            return  # forget(user_id=) came after the turn: nothing of it is kept, not even buffered
        buffer = self._session_buffer(owner, session) if session is not None else None
        if not memory:
            self._stats.bump("turns_opted_out")
            if buffer is not None:
                buffer.exclude(messages)
            return
        if not messages:
            return
        # The policy in force when the turn is handled, read from the store (another process may
        # have changed it).
        policy = self._policy.current()
        if policy.mode == "auto":
            self._distil(owner, messages, policy=policy, session=session, turn=turn, scope=scope,
                         actor="extractor", metadata=metadata, task=task, agent_llm=agent_llm,
                         accepted_at=accepted_at)
        elif policy.mode == "explicit" and buffer is not None:
            buffer.add(Turn(turn=turn, scope=scope, messages=messages, metadata=metadata, task=task,
                            agent_llm=agent_llm, accepted_at=accepted_at))

    def erase_user(self, owner: str) -> None:
        """Drop the user's buffered turns (forget(user_id=)). Queued behind the turns observe()
        has already taken, on the writer thread that alone touches the buffers."""
        def drop() -> None:
            for key in [key for key in self._sessions if key[0] == owner]:
                del self._sessions[key]

        self._writer.submit(drop, "dropping an erased user's buffered turns")

    def memorize(self, session_id: str | None, *, user_id: str | None, messages: Any, scope: str | None,
                 timeout: float | None) -> list[MemoryRecord]:
        self._policy.require_writes("memorize()")
        owner = self._intake.writer(user_id, call="memorize()")
        session = check_optional_str(session_id, name="session_id")
        self._intake.refuse_secret_fields("this memorize()", session_id=session, scope=scope)
        if messages is None and session is None:
            raise ValueError("memorize() needs session_id (a session observe() has seen) or messages")
        given = normalise_messages(messages) if messages is not None else None
        scope_path = normalise_scope(scope) if scope is not None else None
        accepted = time.time()
        future = self._writer.submit(lambda: self._memorize_job(owner, session, given, scope_path, accepted))
        outcome = self._writer.result(future, timeout)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome or []

    def _memorize_job(self, owner: str, session: str | None, given: list[Message] | None,
                      scope: str | None, accepted_at: float) -> list[MemoryRecord] | BaseException:
        try:
            policy = self._policy.require_writes("memorize()")
            buffer = self._sessions.get((owner, session)) if session is not None else None
            if given is not None:
                kept = [m for m in given if buffer is None or not buffer.excluded_message(m)]
                turns = [Turn(turn=None, scope=scope or ROOT, messages=kept, accepted_at=accepted_at)] if kept else []
            else:
                turns = buffer.uncommitted() if buffer is not None else []
                if scope is not None:
                    turns = [replace(t, scope=scope) for t in turns]
            turns = [t for t in turns if not self._erasures.erased_since(owner, t.accepted_at)]
            stored: list[MemoryRecord] = []
            for group in group_turns(turns):
                stored.extend(self._distil(
                    owner, [m for t in group for m in t.messages], policy=policy, session=session,
                    turn=group[0].turn if len(group) == 1 else None, scope=group[0].scope, actor="memorize",
                    metadata=group[0].metadata, task=group[0].task, agent_llm=group[0].agent_llm,
                    accepted_at=min(t.accepted_at for t in group)))
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

    def extract(self, messages: Any) -> list[str]:
        """The statements a turn would be distilled into, stored nowhere: redacted, extracted (the
        LLM when there is one, else the rules), kept to the policy's topics and screened, exactly as
        `observe()` under `auto` would keep them, but not reconciled with what the user has (no
        user is involved). Runs on the caller's thread: the caller waits for its answer."""
        captured = normalise_messages(messages)
        clean = [Message(role=m.role, content=self._redacted(m.content)) for m in captured]
        if not any(m.role != "system" for m in clean):
            return []
        policy = self._policy.current()
        facts, _ = self._extracted(clean, policy=policy, instruction=None, agent_llm=None, existing=[], aliases={})
        return [text for _, text in self._screened(facts, policy)]

    def _distil(self, owner: str, messages: list[Message], *, policy: MemoryPolicy,
                session: str | None, turn: int | None, scope: str, actor: str,
                metadata: dict[str, Any] | None = None, task: str | None = None,
                agent_llm: Any = None, accepted_at: float) -> list[MemoryRecord]:
        """Extract, screen and persist the facts of some messages (runs on the writer thread)."""
        clean = [Message(role=m.role, content=self._redacted(m.content)) for m in messages]
        if not any(m.role != "system" for m in clean):
            return []
        instruction = self._redacted(task) if task is not None else None
        self._stats.bump("turns_extracted")
        existing: list[tuple[int, str]] = []
        aliases: dict[int, str] = {}
        if (self._llm() or agent_llm) is not None:
            existing, aliases = self._existing_for_prompt(owner, clean, scope=scope)
        facts, by_llm = self._extracted(clean, policy=policy, instruction=instruction, agent_llm=agent_llm,
                                        existing=existing, aliases=aliases)
        records: list[MemoryRecord] = []
        decisions: dict[str, Decision] = {}
        ttl = policy.ttl_seconds or None
        now = utcnow()
        for fact, text in self._screened(facts, policy):
            record = self._intake.new_record(
                text, owner=owner, scope=scope, categories=[], importance=0.5, author=fact.author,
                source_kind="tool_result" if fact.from_tool else "conversation", session=session, turn=turn,
                private=False, source=None, metadata=dict(metadata or {}), ttl=ttl, kind="fact", created_at=None,
                topic=fact.topic, now=now)
            records.append(record)
            if by_llm:
                decisions[record.id] = Decision(fact.decision, tuple(fact.targets),
                                                fact.reason or f"LLM decided {fact.decision}", by="llm")
        self._stats.bump("facts_extracted", len(records))
        if not records:
            if actor == "extractor":
                self._explain_nothing(found=len(facts), by_llm=by_llm, task=instruction is not None)
            return []
        label = f"{actor} (llm)" if by_llm else f"{actor} (rules)"
        # Checked again under the erasure order (erasures.py): an erasure through another Memory
        # object while the model extracted falls before this check or after the write.
        with self._erasures.order:
            if self._erasures.erased_since(owner, accepted_at):
                log.warning("dropping %d fact(s) of a turn whose user was erased after it was observed", len(records))
                return []
            stored = self._pipeline.persist_new(records, actor=label, decisions=decisions if by_llm else None,
                                                use_llm=False)
            return [] if self._erasures.undo_if_erased(owner, accepted_at, stored) else stored

    def _extracted(self, clean: list[Message], *, policy: MemoryPolicy, instruction: str | None, agent_llm: Any,
                   existing: list[tuple[int, str]], aliases: dict[int, str]) -> tuple[list[ExtractedFact], bool]:
        """The facts of redacted messages, and whether a model found them (else the rules did)."""
        facts: list[ExtractedFact] | None = None
        # The Memory's own LLM is retried once and each failure logged; an agent's LLM is borrowed
        # for one call, as the framework that runs the agent would make, and a model that does not
        # answer in JSON is said once (it would be every task).
        own = self._llm()
        borrowed = own is None and agent_llm is not None
        llm = own if own is not None else agent_llm
        if llm is not None:
            failures: list[BaseException] = []

            def failed(exc: BaseException) -> None:
                failures.append(exc)
                self._stats.bump("llm_failures")

            facts = llm_extract(
                llm, clean, policy=policy, existing=existing, aliases=aliases,
                on_call=lambda: self._stats.add_llm_call("extract"), on_failure=failed,
                task=instruction, attempts=1 if borrowed else 2,
                log_level=logging.DEBUG if borrowed else logging.WARNING,
            )
            if facts is None:
                self._stats.bump("llm_fallbacks")
                if borrowed:
                    self._say_once("agent llm", f"the agent's LLM could not extract memories ({failures[-1]}); "
                                                "mnemic's rules extract instead (counted in Memory.stats)")
                else:
                    log.warning("LLM extraction failed; the deterministic extractor handles this turn")
        if facts is not None:
            return facts, True
        return (deterministic_extract(clean, topics=policy.topics) if instruction is None
                else task_extract(clean, task=instruction, topics=policy.topics)), False

    def _screened(self, facts: list[ExtractedFact], policy: MemoryPolicy) -> list[tuple[ExtractedFact, str]]:
        """Each fact the policy's topics and safety screening keep, with its text as it is stored."""
        kept: list[tuple[ExtractedFact, str]] = []
        for fact in facts:
            if not topic_allowed(fact, policy.topics):
                self._stats.bump("off_topic_dropped")
                continue
            if REDACTED in fact.text or not fact.text.strip():
                continue  # the secret was counted when it was redacted
            text = scrub(fact.text.strip())[:self._intake.max_text_chars]  # a model's output is repaired
            if self._intake.screen(text, kind="fact", policy=policy, screen_sensitive=True):
                kept.append((fact, text))
        return kept

    def _redacted(self, text: str) -> str:
        # Secrets leave the text before any extractor, or any provider, sees it; only then is it
        # cut to a message's limit (a key straddling the limit would otherwise leave a prefix).
        clean, hits = redact(text)
        if hits:
            self._stats.add_secrets([h.kind for h in hits])
        return clean[:MAX_MESSAGE_CHARS]

    def _explain_nothing(self, *, found: int, by_llm: bool, task: bool) -> None:
        """Say once per reason why an automatic extraction stored nothing: an empty memory with no
        word in the log is what users of other memories complain about."""
        if found:
            reason = ("screened", f"{found} extracted fact(s) were all dropped by the policy's topics or by "
                                  "safety screening (see Memory.stats)")
        elif by_llm:
            reason = ("llm", "the LLM found nothing worth remembering")
        elif task:
            reason = ("task rules", "no LLM is available, and the rules found no statement in the task's "
                                    "result or inputs (they keep the result's declarative sentences and the "
                                    "inputs' first-person statements)")
        else:
            reason = ("rules", "no LLM is configured, and the rules found no statement about the user (they "
                               "keep the user's first-person statements and the assistant's 'you …' ones); "
                               "give the Memory an llm= to extract more")
        self._say_once(reason[0], f"automatic extraction stored nothing from a turn: {reason[1]}")

    def _say_once(self, key: str, message: str) -> None:
        if key in self._explained:
            return
        self._explained.add(key)
        log.warning("%s. Said once.", message)

    def _existing_for_prompt(self, owner: str, messages: list[Message], *, scope: str
                             ) -> tuple[list[tuple[int, str]], dict[int, str]]:
        """The user's facts in the turn's scope nearest to the turn, under small aliases (the model
        never sees ids). Other scopes are never shown: a fact is reconciled within its scope only,
        and a view confined to one scope must not put another scope's facts in front of a model."""
        total = self._store.count(owner)
        if total == 0:
            return [], {}
        chosen: list[MemoryRecord] = []
        if total <= MAX_PROMPT_FACTS:
            # Few enough to show them all: no embedding, and nothing related can be missed.
            now = utcnow()
            chosen = sorted((r for r in map(self._records.decode, self._store.get(owner))
                             if r.user_id == owner and r.state != "invalid" and not r.is_expired(now)
                             and r.kind == "fact" and r.scope == scope),
                            key=lambda r: r.created_at)
        else:
            texts = [m.content[:1000] for m in messages if m.role != "system"][-6:]
            best: dict[str, tuple[float, MemoryRecord]] = {}
            for vector in self._embedder().embed(texts):
                for similar in self._pipeline.similar(owner, vector, kind="fact", k=8, scope=scope):
                    known = best.get(similar.record.id)
                    if known is None or similar.cosine > known[0]:
                        best[similar.record.id] = (similar.cosine, similar.record)
            chosen = [record for _, record in sorted(best.values(), key=lambda pair: -pair[0])[:MAX_PROMPT_FACTS]]
        existing = [(alias, record.text) for alias, record in enumerate(chosen, start=1)]
        aliases = {alias: record.id for alias, record in enumerate(chosen, start=1)}
        return existing, aliases

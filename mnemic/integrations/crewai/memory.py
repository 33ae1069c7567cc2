"""`CrewMemory`: a mnemic Memory as the memory of a CrewAI Crew, Agent or Flow.

CrewAI only accepts its own Memory types (`Crew.memory` is a union discriminated on
`memory_kind`), so CrewMemory subclasses `crewai.Memory` and overrides every call CrewAI makes on
a memory object, routing each into mnemic's core:

- before a task, `recall(task.description, limit=5)` returns mnemic's hybrid matches as CrewAI
  `MemoryMatch` objects whose `format()` marks them as possibly out of date and not instructions;
  lessons are never mixed into it; under the policy's `inject="profile"` the user's profile (their
  newest facts) leads that block, once, with the recalled facts it does not already hold;
- the memory tools CrewAI adds itself are replaced by mnemic's policy-aware ones (`tools.py`);
- after a task, `extract_memories(text)` hands the turn (`task_turn.py`) to mnemic's write
  pipeline (`observe`) under the memory policy, once the task's guardrails accepted the answer,
  and returns [] so that CrewAI's follow-up `remember_many` stores nothing twice (see
  `extract_memories`);
- `remember_many(..., source="hitl")` from `@human_feedback(learn=True)` stores lessons and
  `recall(..., source="hitl")` returns only those lessons (`lessons.py`).

Whose memory each call is for is `users.py`'s job; how a CrewMemory survives CrewAI's copies and
checkpoint restores is `identity.py`'s and `attach.py`'s; record conversion is `convert.py`'s.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.memory_events import MemorySaveFailedEvent
from crewai.memory.types import MemoryMatch, MemoryRecord, ScopeInfo
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from ...checkpoints.crewai_kickoffs import DEFAULT_KEEP_KICKOFFS
from ...core.memory import Memory as MnemicMemory
from ...core.scopes import ROOT, join_scope
from ...core.validation import check_ids, check_items
from ...core.writer import BackgroundWriteError
from ...tools.core import CONTEXT_NOTE
from . import context
from .convert import (
    clean_metadata,
    fact_line,
    naive_utc,
    profile_match,
    to_crewai_matches,
    to_crewai_record,
)
from .identity import DetachedStorage, install_storage_factory, marker, marker_config, register_live
from .lessons import DEFAULT_LESSON_SOURCES, CrewLessons
from .task_turn import task_turn, with_result
from .users import UserBinding

log = logging.getLogger("mnemic.crewai")

TASK_KINDS = ["fact", "note"]


def _lesson_sources(value: Any) -> list[str]:
    """The `source` names that mark lessons, checked here so a wrong value is named at construction
    rather than failing later inside CrewAI's feedback loop."""
    what, example = "a source name or a list of them", "lesson_sources=['hitl']"
    sources = check_items(value, name="lesson_sources", what=what, example=example)
    for source in sources:
        if not isinstance(source, str):
            raise TypeError(f"lesson_sources must be {what}, got an item {source!r:.60} "
                            f"({type(source).__name__}); e.g. {example}")
    return sources


class CrewMemory(Memory):
    """mnemic as a CrewAI memory: `Crew(memory=CrewMemory(memory, user_id="alice"))`.

    `memory` is a mnemic `Memory` (or a store path, opened and owned by this object). `user_id` binds
    every call to one user; leave it out to take the user from each kickoff's `inputs[user_key]` or
    from `for_user()`. `lesson_sources` are the `source` values CrewAI's human-feedback learning
    uses (`learn_source`, "hitl" by default). `read_only` and `root_scope` keep CrewAI's meaning.
    `keep_kickoffs` is how many kickoffs per crew are kept for replay (None: all; 0: none, and
    CrewAI's own single-kickoff store is left in place). The memory policy
    (`memory.set_policy(mode=...)`) decides what is stored automatically.
    """

    _mnemic: MnemicMemory = PrivateAttr()
    _owns_mnemic: bool = PrivateAttr(default=False)
    _users: UserBinding = PrivateAttr()
    _lessons: CrewLessons = PrivateAttr()
    _ref: str = PrivateAttr(default="")
    _configured_read_only: bool = PrivateAttr(default=False)
    _keep_kickoffs: int | None = PrivateAttr(default=DEFAULT_KEEP_KICKOFFS)

    def __init__(
        self,
        memory: MnemicMemory | str | Path | None = None,
        /,
        *,
        user_id: str | None = None,
        user_key: str = "user_id",
        lesson_sources: Sequence[str] = DEFAULT_LESSON_SOURCES,
        keep_kickoffs: int | None = DEFAULT_KEEP_KICKOFFS,
        **data: Any,
    ) -> None:
        for name in ("llm", "embedder", "storage"):
            if name in data:
                raise TypeError(
                    f"CrewMemory takes no {name}=: mnemic's embedder, LLM and store are configured on the "
                    f"mnemic Memory, e.g. CrewMemory(Memory('./.mnemic', embedder=..., llm=...))"
                )
        if memory is None:
            raise TypeError("CrewMemory needs a mnemic Memory or a store path, e.g. CrewMemory(Memory('./.mnemic'))")
        if keep_kickoffs is not None and (not isinstance(keep_kickoffs, int) or isinstance(keep_kickoffs, bool)
                                          or keep_kickoffs < 0):
            raise ValueError(f"keep_kickoffs is how many kickoffs per crew to keep for replay (an int >= 0, or "
                             f"None for all), got {keep_kickoffs!r}")
        sources = _lesson_sources(lesson_sources)
        ref = uuid.uuid4().hex
        users = UserBinding(user_id, user_key, name=f"mnemic_crewai_user_{ref}")
        super().__init__(**data)
        if isinstance(memory, MnemicMemory):
            core, owned = memory, False
        elif isinstance(memory, (str, Path)):
            core, owned = MnemicMemory(memory), True
        else:
            raise TypeError(f"CrewMemory needs a mnemic Memory or a store path, got {type(memory).__name__}")
        self._mnemic = core
        self._owns_mnemic = owned
        self._users = users
        self._lessons = CrewLessons(core, sources)
        self._ref = ref
        self._configured_read_only = bool(self.read_only)
        self._keep_kickoffs = keep_kickoffs
        # The only field CrewAI carries through Agent.copy() and checkpoints is a plain string.
        self.storage = marker(ref=ref, path=str(core.path) if core.path is not None else None,
                              namespace=core.namespace, user_id=users.bound, user_key=users.key)
        self._storage = DetachedStorage(marker_config(self.storage) or {})  # never used by CrewMemory
        register_live(ref, self)
        # Importing the package installed the kickoff hooks and tools; the storage factory is
        # installed again in case the application registered its own since (it is chained).
        install_storage_factory()
        self.refresh_read_only()

    def model_post_init(self, __context: Any) -> None:
        # CrewAI's builds LanceDB storage here (and an OpenAI embedder and LLM on first use);
        # every call that would use them is overridden below, so none of it is built.
        return None

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> CrewMemory:
        # One CrewMemory is one store: a deep copy would try to copy the Chroma client and locks.
        return self

    def __repr__(self) -> str:
        return (f"CrewMemory(namespace={self._mnemic.namespace!r}, user_id={self._users.bound!r}, "
                f"read_only={self.read_only})")

    # -- who and what ---------------------------------------------------------------------------

    @property
    def mnemic(self) -> MnemicMemory:
        """The mnemic Memory behind this CrewAI memory (for operator calls: list, forget, policy)."""
        return self._mnemic

    @property
    def user_id(self) -> str | None:
        """The user bound when this CrewMemory was made (None when each kickoff gives one)."""
        return self._users.bound

    @property
    def user_key(self) -> str:
        return self._users.key

    @property
    def keep_kickoffs(self) -> int | None:
        """How many kickoffs per crew are kept for replay (None: all, 0: none)."""
        return self._keep_kickoffs

    def current_user_id(self) -> str | None:
        """The user memory calls are for right now, or None: `for_user()`, else the innermost
        kickoff whose inputs name one, else the bound user."""
        return self._users.current()

    def for_user_id(self) -> str | None:
        """The user of the enclosing `for_user()` block, which wins over any kickoff's inputs."""
        return self._users.explicit()

    def missing_user_message(self) -> str:
        """What to tell a caller when no user is known (how to give one)."""
        return self._users.missing_message()

    def _require_user(self) -> str:
        return self._users.require()

    @contextmanager
    def for_user(self, user_id: str) -> Iterator[CrewMemory]:
        """Make every call inside the block (and inside any kickoff it starts) for `user_id`."""
        with self._users.for_user(user_id):
            yield self

    def policy_mode(self) -> str:
        """The memory policy's mode now: "off", "explicit" or "auto"."""
        return str(self._mnemic.effective_policy().mode)

    def refresh_read_only(self) -> None:
        """Make `read_only` follow the policy (checked again at every kickoff)."""
        # `read_only` is what CrewAI reads: under `off` it must neither extract after tasks nor offer
        # its "Save to memory" tool. Written past __setattr__, which records the caller's own setting.
        self.__dict__["read_only"] = self._configured_read_only or self.policy_mode() == "off"

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "read_only":
            self._configured_read_only = bool(value)
        super().__setattr__(name, value)

    def writes_refused(self) -> bool:
        """Read-only as configured (under `off` the policy itself refuses, with its own message)."""
        return self._configured_read_only

    def scope_path(self, scope: str | None) -> str:
        """A CrewAI scope as the mnemic scope it names: inside this memory's `root_scope`."""
        return join_scope(self.root_scope or ROOT, scope)

    def _caller(self) -> tuple[str, str]:
        """(author, source_kind) of a direct write: inside a crew task it is the agent's doing
        (a tool it called); elsewhere the application's."""
        if context.current_task_step() is not None:
            return "agent", "remember_tool"
        return "operator", "operator"

    # -- reading -------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        limit: int = 10,
        depth: Literal["shallow", "deep"] = "deep",
        source: str | None = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """The user's facts most relevant to `query` (mnemic's hybrid recall; `depth` does not apply:
        recall never calls an LLM). With a lesson `source` ("hitl"), only that flow method's lessons.
        Private records are served only to their own `source`, whatever `include_private` says."""
        if not isinstance(query, str) or not query.strip() or self.policy_mode() == "off":
            return []
        user = self._require_user()
        # A task description longer than a query may be still deserves memory: its head is searched.
        searched = query.strip()[:self._mnemic.max_text_chars]
        if self._lessons.handles(source):
            return self._lessons.recall(searched, user_id=user, root=self.scope_path(None), limit=limit,
                                        categories=categories, source=source)
        found = self._mnemic.recall(searched, user_id=user, limit=limit, scope=self.scope_path(scope),
                                    categories=categories, kinds=TASK_KINDS, source=source)
        if source is None and not categories and self._is_pre_task_recall(query):
            profile = self._profile_text(user, scope)
            if profile:
                # One block: the profile, then what the task's recall found that it does not hold.
                held = set(profile.splitlines()[1:])
                rest = [m for m in found if fact_line(m.record) not in held]
                return [profile_match(profile, user), *to_crewai_matches(rest, note=None)]
        return to_crewai_matches(found, note=CONTEXT_NOTE)

    def _is_pre_task_recall(self, query: str) -> bool:
        """Whether this is the recall CrewAI makes to build a task's prompt (agent/core.py
        `_retrieve_memory_context`: `recall(task.description, limit=5)`, once per prompt, appended
        to the task's user message), as opposed to a tool's or the application's own recall."""
        step = context.current_task_step()
        return step is not None and query == getattr(step.task, "description", None)

    def _profile_text(self, user: str, scope: str | None) -> str:
        """The user's profile under the policy's `inject="profile"`, else "" (never raises: the
        task prompt then carries the recalled facts alone)."""
        try:
            if self._mnemic.effective_policy().inject != "profile":
                return ""
            return self._mnemic.profile(user, scope=self.scope_path(scope))
        except Exception:
            log.exception("could not read the profile of %s for the task prompt", user)
            return ""

    # -- writing -------------------------------------------------------------------------------

    def extract_memories(self, content: str) -> list[str]:
        """After a task: hand it to mnemic's write pipeline and return []. Any other text: return
        the statements it holds, storing nothing (CrewAI's contract for a direct call, as in a
        Flow's `self.remember_many(self.extract_memories(text))`).

        CrewAI calls this after each task with "Task: …\\nAgent: …\\nExpected result: …\\nResult: …"
        (and "Input: …\\nAgent: …\\nResult: …" after `Agent.kickoff`) and stores whatever comes back
        with `remember_many`. For those, mnemic's pipeline (redaction, extraction, safety,
        reconciliation with what the user already has, history) runs on its background writer
        instead, so the agent is not delayed, and returning [] keeps CrewAI from storing anything a
        second time. Under `auto` the task is a task turn (`task_turn.py`): the task's instruction
        is never stored, this run's inputs are the user's side and the final answer the agent's
        (the "Thought:" part is never stored); when the mnemic Memory has no LLM, the agent's own
        LLM extracts it, in one call, as CrewAI's memory would. Each fact keeps agent role, task,
        crew and kickoff as provenance. Under `explicit` and `off` nothing is stored automatically.
        CrewAI makes this call before the task's guardrails run: inside a task the turn is held
        until the task passes them (`context.hold_until_step_passes`), so an answer a guardrail
        rejected, or that of a task that failed, is never learned.

        Other text is extracted at once by `Memory.extract` (secrets redacted, the policy's topics
        and screening), for the caller to store; under `off` nothing is extracted.
        """
        if self.policy_mode() == "off":
            return []
        turn = task_turn(content, user_key=self._users.key)
        if not turn.after_work:
            return self._mnemic.extract(content)
        if self.writes_refused() or self.policy_mode() != "auto" or not turn.messages:
            return []
        user = self._require_user()
        kick = context.current_crew_kickoff() or context.current_kickoff()
        session, scope = (kick.kickoff_id if kick else None), self.scope_path(None)

        def learn(accepted: Any = None) -> None:
            # The answer the guardrails accepted, which one may have rewritten (a phone number
            # taken out, say): that, not the agent's first words, is what the task teaches.
            # Only for this task's own turn: a coworker's answer to work delegated within the task
            # is held with it, and stays the coworker's.
            raw, description = getattr(accepted, "raw", None), getattr(accepted, "description", None)
            taught = turn
            if isinstance(raw, str) and raw.strip() and content.startswith(f"Task: {description}\n"):
                taught = task_turn(with_result(content, raw), user_key=self._users.key)
            self._mnemic.observe(taught.messages, user_id=user, session_id=session, scope=scope,
                                 metadata=taught.provenance, task=taught.task, agent_llm=taught.agent_llm)

        # CrewAI calls this before the task's guardrails judge the answer: inside a task, what it
        # teaches waits until the task passes them (a rejected answer or a failed task teaches nothing).
        if not context.hold_until_step_passes(learn):
            learn()
        return []

    def remember(
        self,
        content: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> MemoryRecord | None:
        """Store one statement for the current user, as written (a deliberate write: allowed under
        `explicit` and `auto`, refused with PolicyError under `off`). Returns the record that now
        stands for it, or None when read-only or refused by safety (a secret, say)."""
        if self.writes_refused():
            return None
        if self._lessons.handles(source):
            self.remember_many([content], categories=categories, metadata=metadata, importance=importance,
                               source=source, private=private, agent_role=agent_role)
            return None
        user = self._require_user()
        author, source_kind = self._caller()
        extra = clean_metadata({**(metadata or {}), "agent_role": agent_role})
        record = self._mnemic.remember(
            content, user_id=user, scope=join_scope(root_scope or self.root_scope or ROOT, scope),
            categories=categories, importance=importance, author=author, source_kind=source_kind,
            private=private, source=source, metadata=extra,
        )
        return to_crewai_record(record) if record is not None else None

    def remember_many(
        self,
        contents: list[str],
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> list[MemoryRecord]:
        """Queue statements for mnemic's background writer and return [] (as CrewAI does).

        With a lesson `source` ("hitl", from `@human_feedback(learn=True)`) they are stored as
        lessons of the flow method being reviewed, never as facts about the user."""
        given = check_items(contents, name="contents", what="a list of statements (strings)",
                            example="remember_many(['Prefers tea.'])") if contents is not None else []
        items = [c for c in given if isinstance(c, str) and c.strip()]
        if not items or self.writes_refused():
            return []
        user = self._require_user()
        if self._lessons.handles(source):
            self._lessons.learn(items, user_id=user, root=self.scope_path(None), categories=categories,
                                importance=importance, source=source, private=private, metadata=metadata)
            return []
        author, source_kind = self._caller()
        extra = clean_metadata({**(metadata or {}), "agent_role": agent_role})
        self._mnemic.remember_many(
            items, user_id=user, scope=join_scope(root_scope or self.root_scope or ROOT, scope),
            categories=categories, importance=importance, author=author, source_kind=source_kind,
            source=source, private=private, metadata=extra,
        )
        return []

    def drain_writes(self) -> None:
        """Wait for mnemic's queued writes (CrewAI calls this before a kickoff completes).

        As in CrewAI's own memory, a failed background save does not fail the crew that produced
        the output: it is logged and emitted as a MemorySaveFailedEvent.
        """
        try:
            self._mnemic.drain_writes()
        except BackgroundWriteError as exc:
            self._report_failed_saves(exc)

    def _report_failed_saves(self, exc: BackgroundWriteError) -> None:
        for failure in exc.failures:
            log.warning("mnemic: background save failed: %s: %s", failure.description, failure.error)
            crewai_event_bus.emit(self, MemorySaveFailedEvent(
                value=failure.description, error=f"{type(failure.error).__name__}: {failure.error}",
                source_type="mnemic",
            ))

    def close(self) -> None:
        """Finish queued writes; close the mnemic Memory if this object opened it from a path."""
        self.drain_writes()
        if self._owns_mnemic:
            self._mnemic.close()

    # -- changing and erasing --------------------------------------------------------------------

    def forget(
        self,
        scope: str | None = None,
        categories: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
        record_ids: list[str] | None = None,
    ) -> int:
        """Erase the current user's records matching every criterion given; returns how many.
        Allowed on a read-only memory, as CrewAI's own (read-only keeps what is stored unchanged;
        an erasure asked for explicitly must still erase)."""
        user = self._require_user()
        ids = check_ids(record_ids, name="record_ids") if record_ids is not None else None
        if metadata_filter:
            wanted = clean_metadata(metadata_filter)
            matching = [r.id for r in self._mnemic.list(user_id=user, scope=self.scope_path(scope),
                                                        include_invalid=True, include_expired=True,
                                                        limit=100_000)
                        if all(r.metadata.get(k) == v for k, v in wanted.items())]
            ids = [i for i in matching if ids is None or i in ids]
            if not ids:
                return 0
        return self._mnemic.forget(user_id=user, scope=self.scope_path(scope), categories=categories,
                                   older_than=older_than, ids=ids, actor="crewai")

    def update(
        self,
        record_id: str,
        content: str | None = None,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
    ) -> MemoryRecord:
        """Change one of the current user's records (source, privacy and provenance are kept)."""
        user = self._require_user()
        try:
            existing = self._mnemic.get(record_id)
        except KeyError:
            existing = None
        if existing is None or existing.user_id != user:
            raise ValueError(f"Record not found: {record_id}")
        if self.writes_refused():
            return to_crewai_record(existing)
        updated = self._mnemic.update(
            record_id, text=content, scope=self.scope_path(scope) if scope is not None else None,
            categories=categories, metadata=clean_metadata(metadata) if metadata is not None else None,
            importance=importance, actor="crewai",
        )
        return to_crewai_record(updated)

    def reset(self, scope: str | None = None) -> None:
        """Erase the current user's memories (within `scope`). Never the whole store: one CrewMemory
        may serve many users; an operator empties a namespace with `crew_memory.mnemic.reset()`.
        Allowed on a read-only memory, as `forget`."""
        user = self._require_user()
        self._mnemic.forget(user_id=user, scope=self.scope_path(scope), actor="crewai")

    def reset_all(self) -> None:
        """What `crew.reset_memories()` calls: erases the current user's memories, ignoring
        `root_scope` (see `reset`)."""
        user = self._require_user()
        self._mnemic.forget(user_id=user, actor="crewai")

    # -- organisation ------------------------------------------------------------------------------

    def list_records(self, scope: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        user = self._require_user()
        records = self._mnemic.list(user_id=user, scope=self.scope_path(scope), limit=limit, offset=offset)
        return [to_crewai_record(r) for r in records]

    def list_scopes(self, path: str | None = None) -> list[str]:
        user = self._require_user()
        return self._mnemic.list_scopes(self.scope_path(path), user_id=user)

    def list_categories(self, path: str | None = None) -> dict[str, int]:
        user = self._require_user()
        return self._mnemic.list_categories(user_id=user, scope=self.scope_path(path))

    def info(self, path: str | None = None) -> ScopeInfo:
        user = self._require_user()
        base = self.scope_path(path)
        data = self._mnemic.info(base, user_id=user)
        return ScopeInfo(
            path=base, record_count=int(data["records"]), categories=sorted(data["categories"]),
            oldest_record=naive_utc(data["oldest"]) if data["oldest"] else None,
            newest_record=naive_utc(data["newest"]) if data["newest"] else None,
            child_scopes=self._mnemic.list_scopes(base, user_id=user),
        )

    def tree(self, path: str | None = None, max_depth: int = 3) -> str:
        user = self._require_user()
        base = self.scope_path(path)
        root = self._mnemic.tree(user_id=user, scope=base)
        lines = [f"{base} ({root['count']} records)"]

        def walk(node: dict[str, Any], path: str, prefix: str, depth: int) -> None:
            if depth > max_depth:
                return
            for name, child in sorted(node["children"].items())[:20]:  # each line a full path, as CrewAI's
                child_path = join_scope(path, name)
                lines.append(f"{prefix}{child_path} ({child['count']} records)")
                walk(child, child_path, prefix + "  ", depth + 1)

        walk(root, base, "  ", 1)
        return "\n".join(lines)


__all__ = ["CrewMemory"]

"""`CrewMemory`: a mnemic Memory as the memory of a CrewAI Crew, Agent or Flow.

CrewAI only accepts its own Memory types (`Crew.memory` is a union discriminated on
`memory_kind`), so CrewMemory subclasses `crewai.Memory` and overrides every call CrewAI makes on
a memory object, routing each into mnemic's core:

- before a task, `recall(task.description, limit=5)` returns mnemic's hybrid matches as CrewAI
  `MemoryMatch` objects whose `format()` marks them as possibly out of date and not instructions;
  lessons are never mixed into it; under the policy's `inject="profile"` the user's profile (their
  newest facts) leads that block, once, with the recalled facts it does not already hold;
- the memory tools CrewAI adds itself are replaced by mnemic's policy-aware ones (`tools.py`);
- after a task, `extract_memories(text)` hands the turn to mnemic's write pipeline (`observe`)
  under the memory policy and returns [] so that CrewAI's follow-up `remember_many` stores
  nothing twice (see `extract_memories`);
- `remember_many(..., source="hitl")` from `@human_feedback(learn=True)` stores lessons (records
  of kind `lesson`, scoped to the flow and method) and `recall(..., source="hitl")` returns only
  those lessons.

Whose memory: the user is explicit. It is bound when the CrewMemory is made
(`CrewMemory(memory, user_id="alice")`), given per kickoff in the inputs
(`crew.kickoff(inputs={"user_id": "alice"})`) or set around a block of code
(`with crew_memory.for_user("alice"): ...`). `for_user()` wins over the kickoff inputs, which win
over the bound user. With no user, a crew kickoff is refused with an error that says how to give
one, and direct calls raise `UnknownUserError`: memory is never served from, or written into, a
store shared between users. (A session-bound anonymous id was the alternative; refusing is safer
here, because CrewAI swallows memory errors and one crew object typically serves many users, so
an anonymous kickoff would quietly start a memory nobody can reach again.)

CrewAI rebuilds a plain `Memory` from a memory's fields in `Agent.copy()` and on checkpoint
restore. CrewMemory keeps its identity in the one field that survives (`storage`, a string), so a
rebuilt copy gets a harmless placeholder storage instead of LanceDB, and is put back with the live
CrewMemory at the next kickoff, or at once by `reattach()` / `restore_crew()`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.memory_events import MemorySaveFailedEvent
from crewai.hooks.dispatch import HookAborted
from crewai.memory.memory_scope import MemoryScope, MemorySlice
from crewai.memory.storage import factory as crewai_storage_factory
from crewai.memory.types import MemoryMatch, MemoryRecord, ScopeInfo
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from ...core.memory import Memory as MnemicMemory
from ...core.records import MemoryMatch as CoreMatch
from ...core.records import MemoryRecord as CoreRecord
from ...core.safety import redact
from ...core.scopes import ROOT, join_scope
from ...core.validation import check_user_id
from ...core.writer import BackgroundWriteError
from ...tools.core import CONTEXT_NOTE
from . import context

log = logging.getLogger("mnemic.crewai")

MARKER = "mnemic-crewmemory:"
DEFAULT_LESSON_SOURCES: tuple[str, ...] = ("hitl",)
LESSONS_ROOT = "/lessons"
TASK_KINDS = ["fact", "note"]
MAX_LABEL_CHARS = 200

NO_USER = (
    "mnemic CrewMemory does not know which user this run is for, and it never shares memory between "
    "users. Give the user in the kickoff inputs (crew.kickoff(inputs={{'{key}': 'alice'}})), bind it "
    "when the memory is made (CrewMemory(memory, user_id='alice')) or wrap the call in "
    "`with crew_memory.for_user('alice'):`."
)

# CrewAI's result text is the model's whole reply; only what follows the last "Final Answer:" was
# said. The "Thought:" part is private reasoning and never stored.
_FINAL_ANSWER = re.compile(r"Final Answer:\s*", re.IGNORECASE)
_TASK_BLOB = re.compile(
    r"\ATask: (?P<task>.*?)\nAgent: (?P<agent>[^\n]*)\nExpected result: (?P<expected>.*?)\nResult: (?P<result>.*)\Z",
    re.DOTALL,
)
_KICKOFF_BLOB = re.compile(r"\AInput: (?P<input>.*?)\nAgent: (?P<agent>[^\n]*)\nResult: (?P<result>.*)\Z", re.DOTALL)
_LESSON_QUERY = re.compile(r"\Ahuman feedback lessons for (?P<method>[^:\n]+):")
_SLUG_BAD = re.compile(r"[^\w.@:+-]+", re.UNICODE)
_META_KEY_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


class UnknownUserError(RuntimeError):
    """A memory call with no user: none bound, none in the kickoff inputs, none set by for_user()."""


class DetachedMemoryError(RuntimeError):
    """A plain CrewAI Memory rebuilt from a CrewMemory (by Agent.copy or a checkpoint restore)
    that could not be put back with a live CrewMemory."""


# -- identity that survives CrewAI's rebuilds ----------------------------------------------------

_live: weakref.WeakValueDictionary[str, CrewMemory] = weakref.WeakValueDictionary()
_live_lock = threading.Lock()


def _marker_config(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str) or not value.startswith(MARKER):
        return None
    try:
        data = json.loads(value[len(MARKER):])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _is_detached(memory: Any) -> bool:
    return isinstance(memory, Memory) and not isinstance(memory, CrewMemory) \
        and _marker_config(getattr(memory, "storage", None)) is not None


def find_live(config: Mapping[str, Any]) -> CrewMemory | None:
    """The live CrewMemory a marker names: the same object when it is still alive in this process,
    else one over the same store (path and namespace), preferring the one bound to the same user."""
    with _live_lock:
        live = list(_live.values())
    for candidate in live:
        if candidate._ref == config.get("ref"):
            return candidate
    same_store = [c for c in live if c._store_identity() == (config.get("path"), config.get("namespace"))]
    same_user = [c for c in same_store if c._bound_user == config.get("user_id")]
    if same_user:
        return same_user[0]
    return same_store[0] if len(same_store) == 1 else None


class DetachedStorage:
    """The storage CrewAI gets when it rebuilds a plain Memory from a CrewMemory's fields.

    Built instead of LanceDB (CrewAI's fallback for an unknown storage string), so nothing silently
    lands in a second store; every use says how to re-attach.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    def message(self) -> str:
        where = self.config.get("path") or "a Chroma server"
        return (
            "this CrewAI Memory was rebuilt by CrewAI (Agent.copy or checkpoint restore) from a mnemic "
            f"CrewMemory (store {where}, namespace {self.config.get('namespace')!r}) and is not attached to "
            "it. Create the CrewMemory for that store, then call "
            "mnemic.integrations.crewai.reattach(crew_or_agent_or_flow) (or use restore_crew()); a crew "
            "or flow kickoff re-attaches by itself."
        )

    def close(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise DetachedMemoryError(self.message())

        return refuse


def _storage_factory(previous: Any) -> Any:
    def build(spec: str) -> Any:
        config = _marker_config(spec)
        if config is not None:
            return DetachedStorage(config)
        return previous(spec) if previous is not None else None

    build.mnemic_crewai = True  # type: ignore[attr-defined]
    return build


def _install_storage_factory() -> None:
    current = getattr(crewai_storage_factory, "_factory", None)
    if getattr(current, "mnemic_crewai", False):
        return
    # Chained: specs that are not ours go to whatever factory the application registered.
    crewai_storage_factory.set_memory_storage_factory(_storage_factory(current))


def reattach(target: Any, memory: CrewMemory | None = None) -> int:
    """Put a live CrewMemory back wherever CrewAI rebuilt a plain Memory from one.

    `target` is a Crew (its memory and every agent's), an Agent or a Flow. `memory` is used for
    every rebuilt memory when given; otherwise each is matched to a live CrewMemory over the same
    store. Returns how many were replaced; raises DetachedMemoryError when one has no match.
    """
    replaced = 0
    for holder, attribute, current in list(context.iter_memories(target)):
        if isinstance(current, (MemoryScope, MemorySlice)):
            backing = getattr(current, "_memory", None)
            if _is_detached(backing):
                current.bind(memory or _live_for(backing))
                replaced += 1
            continue
        if not _is_detached(current):
            continue
        setattr(holder, attribute, memory or _live_for(current))
        replaced += 1
    if replaced:
        log.info("re-attached %d mnemic CrewMemory reference(s) to %s", replaced, type(target).__name__)
    return replaced


def _live_for(rebuilt: Any) -> CrewMemory:
    config = _marker_config(rebuilt.storage) or {}
    found = find_live(config)
    if found is None:
        raise DetachedMemoryError(DetachedStorage(config).message())
    return found


def restore_crew(config: Any, memory: CrewMemory | None = None) -> Any:
    """`Crew.from_checkpoint(config)` with mnemic kept as the memory (see `reattach`)."""
    from crewai import Crew

    crew = Crew.from_checkpoint(config)
    reattach(crew, memory)
    return crew


def _check_kickoff(owner: Any, inputs: Mapping[str, Any]) -> None:
    """Run at every Crew and Flow kickoff: re-attach rebuilt memories, apply the policy to
    `read_only`, and refuse a crew kickoff whose memory has no user. A memory that cannot be used
    (closed, unreachable) refuses the kickoff too: CrewAI would only log each failed call."""
    try:
        _prepare_kickoff(owner)
    except HookAborted:
        raise
    except Exception as exc:
        raise HookAborted(f"mnemic: {type(exc).__name__}: {exc}", source="mnemic") from exc


def _prepare_kickoff(owner: Any) -> None:
    try:
        reattach(owner)
    except DetachedMemoryError as exc:
        raise HookAborted(f"mnemic: {exc}", source="mnemic") from exc
    is_crew = hasattr(owner, "tasks") and hasattr(owner, "agents")
    seen: set[int] = set()
    for _, _, current in context.iter_memories(owner):
        mem = current._memory if isinstance(current, (MemoryScope, MemorySlice)) else current
        if not isinstance(mem, CrewMemory) or id(mem) in seen:
            continue
        seen.add(id(mem))
        mem._sync_read_only()
        if not is_crew or mem._mode() == "off":
            continue  # a flow uses memory only when asked (those calls say what is missing); off uses none
        try:
            user = mem.current_user_id()
        except (TypeError, ValueError) as exc:
            raise HookAborted(f"mnemic: bad user in kickoff inputs: {exc}", source="mnemic") from exc
        if user is None:
            raise HookAborted("mnemic: " + NO_USER.format(key=mem._user_key), source="mnemic")


# -- conversions ----------------------------------------------------------------------------------


def _naive_utc(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    if value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def to_crewai_record(record: CoreRecord) -> MemoryRecord:
    """A mnemic record as CrewAI's MemoryRecord (same id; the text is `content`)."""
    metadata: dict[str, Any] = dict(record.metadata)
    metadata.setdefault("kind", record.kind)
    return MemoryRecord(
        id=record.id,
        content=record.text,
        scope=record.scope,
        categories=list(record.categories),
        metadata=metadata,
        importance=min(max(record.importance, 0.0), 1.0),
        created_at=_naive_utc(record.created_at),
        last_accessed=_naive_utc(record.last_accessed_at or record.updated_at),
        source=record.source,
        private=record.private,
    )


class CrewMemoryMatch(MemoryMatch):
    """A CrewAI MemoryMatch from a mnemic recall. `format()` gives one line per fact, and the first
    match of a list carries the note that memories may be out of date and are not instructions."""

    _note: str | None = PrivateAttr(default=None)

    def format(self) -> str:
        when = self.record.created_at.date().isoformat()
        # One line per fact: a stored newline must not let a fact pose as a header or a message.
        line = f"- {' '.join(self.record.content.split())} (remembered {when})"
        return f"{self._note}\n{line}" if self._note else line


def to_crewai_matches(matches: Sequence[CoreMatch], *, note: str | None) -> list[MemoryMatch]:
    result: list[MemoryMatch] = []
    for index, match in enumerate(matches):
        converted = CrewMemoryMatch(
            record=to_crewai_record(match.record),
            score=match.score,
            match_reasons=[match.explanation],
        )
        if index == 0 and note:
            converted._note = note
        result.append(converted)
    return result


class ProfileMatch(CrewMemoryMatch):
    """The user's profile (`Memory.profile`, already headed as background that may be out of date
    and is not instructions) as the first match of a pre-task recall; `format()` gives it whole."""

    _text: str = PrivateAttr(default="")

    def format(self) -> str:
        return self._text


def _profile_match(text: str, user_id: str) -> ProfileMatch:
    now = _naive_utc(None)
    match = ProfileMatch(
        record=MemoryRecord(id=f"mnemic-profile:{user_id}", content=text, scope=ROOT, created_at=now,
                            last_accessed=now, metadata={"kind": "profile"}),
        score=1.0,
        match_reasons=["profile"],
    )
    match._text = text
    return match


def _fact_line(record: CoreRecord) -> str:
    """A fact as `format_profile` writes it (one line), to tell which recalled facts it holds."""
    return f"- {' '.join(record.text.split())} (remembered {record.created_at.date().isoformat()})"


def _slug(value: str) -> str:
    cleaned = _SLUG_BAD.sub("-", value.strip()).strip("-")
    return (cleaned or "unnamed")[:128]


def _label(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    if not text:
        return None
    text, _ = redact(text)  # provenance is stored beside the fact, so it is screened like the fact
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def _clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str | int | float | bool]:
    """CrewAI metadata (any values, any keys) as what mnemic stores: scalar values, safe keys."""
    cleaned: dict[str, str | int | float | bool] = {}
    for key, value in (metadata or {}).items():
        if value is None:
            continue
        name = _META_KEY_BAD.sub("_", str(key)).strip("_")[:64]
        if not name:
            continue
        if not name[0].isalpha():
            name = ("m" + name)[:64]
        if isinstance(value, (bool, int, float)):
            cleaned[name] = value
        else:
            cleaned[name] = _label(value) or ""
    return cleaned


def _final_answer(text: str) -> str:
    found = list(_FINAL_ANSWER.finditer(text))
    if found:
        return text[found[-1].end():].strip()
    kept = [line for line in text.splitlines() if not line.lstrip().lower().startswith("thought:")]
    return "\n".join(kept).strip()


# -- the memory ---------------------------------------------------------------------------------


class CrewMemory(Memory):
    """mnemic as a CrewAI memory: `Crew(memory=CrewMemory(memory, user_id="alice"))`.

    `memory` is a mnemic `Memory` (or a store path, opened and owned by this object). `user_id` binds
    every call to one user; leave it out to take the user from each kickoff's `inputs[user_key]` or
    from `for_user()`. `lesson_sources` are the `source` values CrewAI's human-feedback learning
    uses (`learn_source`, "hitl" by default). `read_only` and `root_scope` keep CrewAI's meaning.
    The memory policy (`memory.set_policy(mode=...)`) decides what is stored automatically.
    """

    _mnemic: MnemicMemory = PrivateAttr()
    _owns_mnemic: bool = PrivateAttr(default=False)
    _bound_user: str | None = PrivateAttr(default=None)
    _user_key: str = PrivateAttr(default="user_id")
    _lesson_sources: frozenset[str] = PrivateAttr(default=frozenset(DEFAULT_LESSON_SOURCES))
    _user_var: ContextVar[str | None] = PrivateAttr()
    _ref: str = PrivateAttr(default="")
    _configured_read_only: bool = PrivateAttr(default=False)

    def __init__(
        self,
        memory: MnemicMemory | str | Path | None = None,
        /,
        *,
        user_id: str | None = None,
        user_key: str = "user_id",
        lesson_sources: Sequence[str] = DEFAULT_LESSON_SOURCES,
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
        if not isinstance(user_key, str) or not user_key:
            raise ValueError("user_key must name the kickoff input that holds the user id, e.g. 'user_id'")
        if isinstance(lesson_sources, str):
            lesson_sources = [lesson_sources]
        bound = check_user_id(user_id) if user_id is not None else None
        super().__init__(**data)
        if isinstance(memory, MnemicMemory):
            core, owned = memory, False
        elif isinstance(memory, (str, Path)):
            core, owned = MnemicMemory(memory), True
        else:
            raise TypeError(f"CrewMemory needs a mnemic Memory or a store path, got {type(memory).__name__}")
        self._mnemic = core
        self._owns_mnemic = owned
        self._bound_user = bound
        self._user_key = user_key
        self._lesson_sources = frozenset(lesson_sources)
        self._ref = uuid.uuid4().hex
        self._user_var = ContextVar(f"mnemic_crewai_user_{self._ref}", default=None)
        self._configured_read_only = bool(self.read_only)
        # The only field CrewAI carries through Agent.copy() and checkpoints is a plain string.
        self.storage = MARKER + json.dumps({
            "v": 1, "ref": self._ref, "path": str(core.path) if core.path is not None else None,
            "namespace": core.namespace, "user_id": bound, "user_key": user_key,
        }, sort_keys=True)
        self._storage = DetachedStorage(_marker_config(self.storage) or {})  # never used by CrewMemory
        with _live_lock:
            _live[self._ref] = self
        install()
        self._sync_read_only()

    def model_post_init(self, __context: Any) -> None:
        # CrewAI's builds LanceDB storage here (and an OpenAI embedder and LLM on first use);
        # every call that would use them is overridden below, so none of it is built.
        return None

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> CrewMemory:
        # One CrewMemory is one store: a deep copy would try to copy the Chroma client and locks.
        return self

    def __repr__(self) -> str:
        return (f"CrewMemory(namespace={self._mnemic.namespace!r}, user_id={self._bound_user!r}, "
                f"read_only={self.read_only})")

    # -- who and what ---------------------------------------------------------------------------

    @property
    def mnemic(self) -> MnemicMemory:
        """The mnemic Memory behind this CrewAI memory (for operator calls: list, forget, policy)."""
        return self._mnemic

    @property
    def user_id(self) -> str | None:
        """The user bound when this CrewMemory was made (None when each kickoff gives one)."""
        return self._bound_user

    @property
    def user_key(self) -> str:
        return self._user_key

    def _store_identity(self) -> tuple[str | None, str]:
        path = self._mnemic.path
        return (str(path) if path is not None else None, self._mnemic.namespace)

    def current_user_id(self) -> str | None:
        """The user memory calls are for right now, or None: `for_user()`, else the innermost
        kickoff whose inputs name one, else the bound user."""
        explicit = self._user_var.get()
        if explicit is not None:
            return explicit
        for kick in reversed(context.kickoffs()):
            value = kick.inputs.get(self._user_key)
            if value is not None:
                return check_user_id(value)
        return self._bound_user

    def _require_user(self) -> str:
        user = self.current_user_id()
        if user is None:
            raise UnknownUserError(NO_USER.format(key=self._user_key))
        return user

    @contextmanager
    def for_user(self, user_id: str) -> Iterator[CrewMemory]:
        """Make every call inside the block (and inside any kickoff it starts) for `user_id`."""
        token = self._user_var.set(check_user_id(user_id))
        try:
            yield self
        finally:
            self._user_var.reset(token)

    def _mode(self) -> str:
        return str(self._mnemic.effective_policy().mode)

    def _sync_read_only(self) -> None:
        # `read_only` is what CrewAI reads: under `off` it must neither extract after tasks nor offer
        # its "Save to memory" tool. Written past __setattr__, which records the caller's own setting.
        self.__dict__["read_only"] = self._configured_read_only or self._mode() == "off"

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "read_only":
            self._configured_read_only = bool(value)
        super().__setattr__(name, value)

    def _writes_refused(self) -> bool:
        """Read-only as configured (under `off` the policy itself refuses, with its own message)."""
        return self._configured_read_only

    def _scope(self, scope: str | None) -> str:
        return join_scope(self.root_scope or ROOT, scope)

    def _is_lesson_source(self, source: str | None) -> bool:
        return source is not None and source in self._lesson_sources

    def _lesson_place(self, query: str | None = None) -> tuple[str | None, str | None]:
        """(flow, method) of the human-feedback step running now, each None when unknown.

        CrewAI does not pass the method to `remember_many`; the flow-method step the hooks recorded
        says which one it is (the pre-review query also names it)."""
        step = context.current_flow_step()
        flow = step.flow_name if step is not None else None
        method = step.method if step is not None else None
        if flow is None:
            from crewai.flow.flow_context import current_flow_name

            flow = current_flow_name.get()
        if method is None and query:
            found = _LESSON_QUERY.match(query)
            method = found.group("method").strip() if found else None
        return flow, method

    def _lesson_scope(self, flow: str | None, method: str | None) -> str:
        path = LESSONS_ROOT
        if flow is not None:
            path += f"/{_slug(flow)}"
            if method is not None:
                path += f"/{_slug(method)}"
        return self._scope(path)

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
        if not isinstance(query, str) or not query.strip() or self._mode() == "off":
            return []
        user = self._require_user()
        if self._is_lesson_source(source):
            flow, method = self._lesson_place(query)
            # Without the flow the scope cannot name the method; the lessons' metadata can.
            wanted = limit if flow is not None or method is None else max(limit * 4, 40)
            lessons = self._mnemic.recall(query, user_id=user, limit=wanted, kinds=["lesson"],
                                          scope=self._lesson_scope(flow, method), categories=categories,
                                          source=source)
            if flow is None and method is not None:
                lessons = [m for m in lessons if m.record.metadata.get("method") == method]
            return to_crewai_matches(lessons[:limit], note=None)
        found = self._mnemic.recall(query, user_id=user, limit=limit, scope=self._scope(scope),
                                    categories=categories, kinds=TASK_KINDS, source=source)
        if source is None and not categories and self._is_pre_task_recall(query):
            profile = self._profile_text(user, scope)
            if profile:
                # One block: the profile, then what the task's recall found that it does not hold.
                held = set(profile.splitlines()[1:])
                rest = [m for m in found if _fact_line(m.record) not in held]
                return [_profile_match(profile, user), *to_crewai_matches(rest, note=None)]
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
            return self._mnemic.profile(user, scope=self._scope(scope))
        except Exception:
            log.exception("could not read the profile of %s for the task prompt", user)
            return ""

    # -- writing -------------------------------------------------------------------------------

    def extract_memories(self, content: str) -> list[str]:
        """Hand a finished task to mnemic's write pipeline and return [].

        CrewAI calls this after each task with "Task: …\\nAgent: …\\nExpected result: …\\nResult: …" and
        stores whatever comes back with `remember_many`. mnemic's pipeline (redaction, extraction,
        safety, reconciliation with what the user already has, history) runs on its background
        writer instead, so the agent is not delayed, and returning [] keeps CrewAI from storing
        anything a second time. Under `auto` the task description is the user's side of the turn
        and the final answer the assistant's (the "Thought:" part is never stored); each fact keeps
        agent role, task, crew and kickoff as provenance. Under `explicit` and `off` nothing is
        stored automatically.
        """
        if self._writes_refused() or self._mode() != "auto":
            return []
        user = self._require_user()
        messages, provenance = self._task_turn(content)
        if not messages:
            return []
        kick = context.current_crew_kickoff() or context.current_kickoff()
        self._mnemic.observe(messages, user_id=user, session_id=kick.kickoff_id if kick else None,
                             scope=self._scope(None), metadata=provenance)
        return []

    def _task_turn(self, content: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
        step = context.current_task_step()
        task = step.task if step is not None else None
        agent = step.agent if step is not None else None
        role = getattr(agent, "role", None)
        description: str | None = None
        result: str | None = None
        if task is not None:
            prefix = (f"Task: {task.description}\nAgent: {role}\nExpected result: {task.expected_output}\n"
                      "Result: ")
            if content.startswith(prefix):
                description, result = task.description, content[len(prefix):]
        if result is None:
            blob = _TASK_BLOB.match(content) or _KICKOFF_BLOB.match(content)
            if blob is not None:
                parts = blob.groupdict()
                description = parts.get("task") or parts.get("input")
                result = parts["result"]
                role = role or parts.get("agent")
        messages: list[dict[str, str]] = []
        if result is None:
            if content.strip():
                messages.append({"role": "user", "content": content})
        else:
            if description and description.strip():
                messages.append({"role": "user", "content": description})
            answer = _final_answer(result)
            if answer:
                messages.append({"role": "assistant", "content": answer})
        kick = context.current_crew_kickoff()
        task_label = (getattr(task, "name", None) or description) if task is not None else description
        provenance = {
            "framework": "crewai",
            "agent_role": _label(role),
            "task": _label(task_label),
            "crew": _label(kick.name) if kick is not None else None,
            "kickoff_id": kick.kickoff_id if kick is not None else None,
        }
        return messages, {k: v for k, v in provenance.items() if v}

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
        if self._writes_refused():
            return None
        if self._is_lesson_source(source):
            self.remember_many([content], categories=categories, metadata=metadata, importance=importance,
                               source=source, private=private, agent_role=agent_role)
            return None
        user = self._require_user()
        author, source_kind = self._caller()
        extra = _clean_metadata({**(metadata or {}), "agent_role": agent_role})
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
        items = [c for c in (contents or []) if isinstance(c, str) and c.strip()]
        if not items or self._writes_refused():
            return []
        user = self._require_user()
        if self._is_lesson_source(source):
            flow, method = self._lesson_place()
            extra = _clean_metadata({**(metadata or {}), "flow": flow, "method": method})
            self._mnemic.remember_many(
                items, user_id=user, kind="lesson", scope=self._lesson_scope(flow, method), categories=categories,
                importance=importance, author="user", source_kind="feedback", source=source,
                private=private, metadata=extra,
            )
            return []
        author, source_kind = self._caller()
        extra = _clean_metadata({**(metadata or {}), "agent_role": agent_role})
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

    def _deny_if_read_only(self, action: str) -> None:
        if self._writes_refused():
            raise PermissionError(f"this CrewMemory is read-only: {action} is not allowed")

    def forget(
        self,
        scope: str | None = None,
        categories: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
        record_ids: list[str] | None = None,
    ) -> int:
        """Erase the current user's records matching every criterion given; returns how many."""
        self._deny_if_read_only("forget()")
        user = self._require_user()
        ids = record_ids
        if metadata_filter:
            wanted = _clean_metadata(metadata_filter)
            matching = [r.id for r in self._mnemic.list(user_id=user, scope=self._scope(scope),
                                                        include_invalid=True, include_expired=True,
                                                        limit=100_000)
                        if all(r.metadata.get(k) == v for k, v in wanted.items())]
            ids = [i for i in matching if record_ids is None or i in record_ids]
            if not ids:
                return 0
        return self._mnemic.forget(user_id=user, scope=self._scope(scope), categories=categories,
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
        if self._writes_refused():
            return to_crewai_record(existing)
        updated = self._mnemic.update(
            record_id, text=content, scope=self._scope(scope) if scope is not None else None,
            categories=categories, metadata=_clean_metadata(metadata) if metadata is not None else None,
            importance=importance, actor="crewai",
        )
        return to_crewai_record(updated)

    def reset(self, scope: str | None = None) -> None:
        """Erase the current user's memories (within `scope`). Never the whole store: one CrewMemory
        may serve many users; an operator empties a namespace with `crew_memory.mnemic.reset()`."""
        self._deny_if_read_only("reset()")
        user = self._require_user()
        self._mnemic.forget(user_id=user, scope=self._scope(scope), actor="crewai")

    def reset_all(self) -> None:
        """What `crew.reset_memories()` calls: erases the current user's memories, ignoring
        `root_scope` (see `reset`)."""
        self._deny_if_read_only("reset_all()")
        user = self._require_user()
        self._mnemic.forget(user_id=user, actor="crewai")

    # -- organisation ------------------------------------------------------------------------------

    def list_records(self, scope: str | None = None, limit: int = 200, offset: int = 0) -> list[MemoryRecord]:
        user = self._require_user()
        records = self._mnemic.list(user_id=user, scope=self._scope(scope), limit=limit, offset=offset)
        return [to_crewai_record(r) for r in records]

    def list_scopes(self, path: str | None = None) -> list[str]:
        user = self._require_user()
        return self._mnemic.list_scopes(self._scope(path), user_id=user)

    def list_categories(self, path: str | None = None) -> dict[str, int]:
        user = self._require_user()
        return self._mnemic.list_categories(user_id=user, scope=self._scope(path))

    def info(self, path: str | None = None) -> ScopeInfo:
        user = self._require_user()
        base = self._scope(path)
        data = self._mnemic.info(base, user_id=user)
        return ScopeInfo(
            path=base, record_count=int(data["records"]), categories=sorted(data["categories"]),
            oldest_record=_naive_utc(data["oldest"]) if data["oldest"] else None,
            newest_record=_naive_utc(data["newest"]) if data["newest"] else None,
            child_scopes=self._mnemic.list_scopes(base, user_id=user),
        )

    def tree(self, path: str | None = None, max_depth: int = 3) -> str:
        user = self._require_user()
        base = self._scope(path)
        root = self._mnemic.tree(user_id=user, scope=base)
        lines = [f"{base} ({root['count']} records)"]

        def walk(node: dict[str, Any], prefix: str, depth: int) -> None:
            if depth > max_depth:
                return
            for name, child in sorted(node["children"].items()):
                lines.append(f"{prefix}{name} ({child['count']} records)")
                walk(child, prefix + "  ", depth + 1)

        walk(root, "  ", 1)
        return "\n".join(lines)


# -- run context for the tools ------------------------------------------------------------------


def _memory_of(candidate: Any) -> CrewMemory | None:
    if isinstance(candidate, (MemoryScope, MemorySlice)):
        candidate = getattr(candidate, "_memory", None)
    return candidate if isinstance(candidate, CrewMemory) else None


def _resolve_run() -> Any:
    """What a mnemic tool running inside CrewAI needs: the CrewMemory of the agent (or crew, or
    flow) executing now, the user, and the kickoff as the session."""
    from ...tools.crewai import RunContext

    step = context.current_task_step()
    kick = context.current_crew_kickoff() or context.current_kickoff()
    found: CrewMemory | None = _memory_of(getattr(step.agent, "memory", None)) if step is not None else None
    if found is None and kick is not None:
        found = _memory_of(getattr(kick.owner, "_memory", None)) or _memory_of(getattr(kick.owner, "memory", None))
    if found is None:
        flow_step = context.current_flow_step()
        if flow_step is not None:
            found = _memory_of(getattr(flow_step.flow, "memory", None))
    user: str | None = None
    if found is not None:
        user = found.current_user_id()
    else:
        for outer in reversed(context.kickoffs()):
            value = outer.inputs.get("user_id")
            if isinstance(value, str) and value.strip():
                user = value.strip()
                break
    return RunContext(memory=found.mnemic if found is not None else None, user_id=user,
                      session_id=kick.kickoff_id if kick is not None else None)


def install() -> None:
    """Process-wide set-up, idempotent: the storage factory that keeps rebuilt copies off LanceDB,
    the kickoff and step hooks, how the tools read the run, and mnemic's tools in place of CrewAI's
    built-in memory tools for CrewMemory. Done on import of
    `mnemic.integrations.crewai`; the hooks do nothing for runs that use no mnemic memory."""
    _install_storage_factory()
    context.install(_check_kickoff)
    from ...tools import crewai as crewai_tools
    from . import tools as builtin_tools

    crewai_tools.set_run_context_resolver(_resolve_run)
    builtin_tools.install()


__all__ = [
    "MARKER",
    "CrewMemory",
    "CrewMemoryMatch",
    "DetachedMemoryError",
    "DetachedStorage",
    "ProfileMatch",
    "UnknownUserError",
    "find_live",
    "install",
    "reattach",
    "restore_crew",
    "to_crewai_record",
]

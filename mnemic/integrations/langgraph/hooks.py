"""Recall before the model, extraction after the answer: memory hooks for LangGraph agents.

    hooks = MemoryHooks(memory, system_prompt="You are a helpful assistant.")
    agent = create_react_agent(model, tools=memory_tools(memory), prompt=hooks.prompt,
                               post_model_hook=hooks.post_model_hook, store=MnemicStore(memory))
    agent.invoke({"messages": [...]}, {"configurable": {"user_id": "alice", "thread_id": "t1"}})
    hooks.flush()   # tests: wait for background extraction

Before each model call, `prompt` (or `pre_model_hook`) puts what memory knows about the run's
user in front of the user's latest message: the profile (newest facts, when the policy's `inject`
is "profile" or `profile=True`) and the memories relevant to that message. It goes in as a user
message headed "may be out of date, not instructions", never as a system message: memory is text
that came from users and documents, and must not get instruction priority. It is not written to the
graph's messages, so it is never extracted back into memory. Through `prompt` (or `middleware()`)
it is in no checkpoint either; `pre_model_hook` returns it as `llm_input_messages`, which LangGraph
checkpoints, so a fact deleted later stays in the thread's saved history: prefer `prompt` whenever
the graph has a checkpointer.

After the model's final answer (an AI message with no tool calls), `post_model_hook` hands the
turn to `Memory.observe`, which returns at once: under policy `auto` the turn is distilled into
facts on mnemic's single background writer; under `explicit` it is kept for `memorize`; under
`off` nothing happens. The messages and the user are captured before the hand-over (a context
variable would not follow into the writer thread). `config["configurable"]["memory"] = False` opts
one turn out of every write.

The user comes from the run: `config["configurable"]["user_id"]` or a runtime context's `user_id`.
A run without one gets no memory at all, neither read nor written.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda

from ...core.policy import format_profile
from ...core.records import MemoryRecord, utcnow
from ...tools.langchain import USER_KEY, IdentityError, RunIdentity, run_identity

if TYPE_CHECKING:
    from ...core.memory import Memory

log = logging.getLogger("mnemic.langgraph")

CONTEXT_MESSAGE_ID = "mnemic-memory-context"
MEMORY_KINDS = ["fact", "note"]
TURN_CACHE_SIZE = 256
# Memory.list reads every record of the user to find the newest few (~0.5 ms per fact here), so a
# profile is reused until the user's memory changes. The change signature sees this process's
# writes at once; on a server the reused facts are read again by id (another process may have
# invalidated one), and the age limit bounds how long a fact added elsewhere waits to appear.
PROFILE_MAX_AGE_S = 30.0
# A turn's context is reused for its later model calls while the user's memory is unchanged; the
# age limit bounds what a change the signature cannot see (one made by another process, a policy
# change) waits, as for the profile.
TURN_MAX_AGE_S = 30.0
# Results of memory's own tools are memory's output: extracting them again would store what
# was recalled as new (pending) tool facts.
MEMORY_TOOL_NAMES = frozenset({"search_memory", "remember", "search_knowledge"})


def _messages_of(state: Any) -> list[BaseMessage]:
    messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
    return list(messages or [])


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = [block if isinstance(block, str) else block.get("text", "")
             for block in content if isinstance(block, (str, dict))]
    return " ".join(p for p in parts if p)


def _last_human(messages: Sequence[BaseMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage) and messages[index].id != CONTEXT_MESSAGE_ID:
            return index
    return None


def is_final_answer(message: BaseMessage | None) -> bool:
    """The turn's last model message: an AI message that asks for no tool."""
    return isinstance(message, AIMessage) and not message.tool_calls


class MemoryHooks:
    """Memory before and after the model, for one Memory.

    `prompt`, `pre_model_hook` and `post_model_hook` are runnables for `create_react_agent`
    (sync and async); `middleware()` gives the same for `langchain.agents.create_agent`.
    `context_messages` and `observe_turn` are the same steps for hand-built graphs.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        system_prompt: str | None = None,
        recall_limit: int = 5,
        profile: bool | None = None,
        profile_limit: int = 10,
        user_key: str = USER_KEY,
        cache_turn: bool = True,
    ) -> None:
        self.memory = memory
        self.system_prompt = system_prompt
        self.recall_limit = recall_limit
        self.profile = profile
        self.profile_limit = profile_limit
        self.user_key = user_key
        # A turn with tool calls calls the model again for the same user message: its memory
        # context is computed once per turn (keyed by that message's id) instead of once per call,
        # and computed again when the user's memory changed meanwhile (a tool call in the turn
        # may have invalidated a fact the context holds) or one of its facts expired.
        self.cache_turn = cache_turn
        self._turns: OrderedDict[tuple[str, ...], _TurnContext] = OrderedDict()
        self._profiles: dict[str, tuple[Any, float, list[MemoryRecord]]] = {}
        self._turns_lock = threading.Lock()
        self.prompt = RunnableLambda(self._prompt, afunc=self._aprompt, name="mnemic_prompt")
        self.pre_model_hook = RunnableLambda(self._pre_model, afunc=self._apre_model, name="mnemic_recall")
        self.post_model_hook = RunnableLambda(self._post_model, afunc=self._apost_model, name="mnemic_extract")

    def __repr__(self) -> str:
        return f"MemoryHooks(namespace={self.memory.namespace!r})"

    # -- before the model -----------------------------------------------------------------------

    def _identity(self, config: Mapping[str, Any] | None, context: Any = None) -> RunIdentity | None:
        try:
            return run_identity(config, user_key=self.user_key, context=context)
        except IdentityError as exc:
            log.warning("no memory for this run: %s", exc)
            return None

    def context_text(self, user_id: str | None, query: str | None) -> str:
        """What memory puts before the model for `user_id`: the profile (when enabled) and the
        memories relevant to `query`, headed as background that is not instructions; "" for none."""
        return format_profile(self._context_records(user_id, query))

    def _context_records(self, user_id: str | None, query: str | None) -> list[MemoryRecord]:
        if user_id is None:
            return []
        policy = self.memory.effective_policy()
        if policy.mode == "off":
            return []
        records: dict[str, MemoryRecord] = {}
        if self.profile or (self.profile is None and policy.inject == "profile"):
            records.update((r.id, r) for r in self._profile_records(user_id))
        if query and query.strip():
            for match in self.memory.recall(query[:2000], user_id=user_id, limit=self.recall_limit,
                                            kinds=MEMORY_KINDS):
                records.setdefault(match.record.id, match.record)
        return list(records.values())

    def _profile_records(self, user_id: str) -> list[MemoryRecord]:
        self.memory.wait_for_writes()  # facts still being written belong in the profile
        signature = _change_signature(self.memory, user_id)
        now = time.monotonic()
        with self._turns_lock:
            cached = self._profiles.get(user_id)
        if cached is not None and signature is not None and cached[0] == signature \
                and now - cached[1] < PROFILE_MAX_AGE_S:
            records = cached[2] if self.memory.mode == "embedded" else self._reread(cached[2])
        else:
            records = [r for r in self.memory.list(user_id=user_id, include_pending=False, kinds=MEMORY_KINDS,
                                                   limit=self.profile_limit) if not r.private]
            with self._turns_lock:
                self._profiles[user_id] = (signature, now, records)
                while len(self._profiles) > TURN_CACHE_SIZE:
                    self._profiles.pop(next(iter(self._profiles)))
        moment = utcnow()
        return [r for r in records if r.is_servable(moment)]

    def _reread(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """Cached facts (a profile, a turn's context) as stored now. On a server another process
        may have invalidated a fact, which this process's revision does not show: reading the few
        cached facts again (one read each) keeps an invalidated fact out; a fact added meanwhile
        waits for the age limit."""
        fresh = []
        for record in records:
            try:
                fresh.append(self.memory.get(record.id))
            except KeyError:
                continue  # deleted or erased meanwhile
        return fresh

    def context_messages(self, messages: Sequence[BaseMessage], config: Mapping[str, Any] | None = None,
                         *, context: Any = None) -> list[BaseMessage]:
        """`messages` with the memory context placed just before the user's latest message
        (and the hooks' system prompt first). Never raises: a failure leaves memory out."""
        result = list(messages)
        who = self._identity(config, context)
        position = _last_human(result)
        key = self._turn_key(who, result[position] if position is not None else None)
        signature = _change_signature(self.memory, key[0]) if key is not None else None
        try:
            cached = self._cached(key, signature)
            if cached is not None:
                text = cached
            else:
                records = self._context_records(who.user_id if who else None,
                                                _text(result[position]) if position is not None else None)
                text = format_profile(records)
                self._remember_turn(key, signature, records, text)
        except Exception:  # a memory failure must not stop the agent: it answers without memory
            log.exception("memory recall failed; the model is called without memory context")
            text = ""
        if text:
            note = HumanMessage(content=text, id=CONTEXT_MESSAGE_ID)
            if position is None:
                position = next((i for i, m in enumerate(result) if not isinstance(m, SystemMessage)), len(result))
            result.insert(position, note)
        if self.system_prompt:
            result.insert(0, SystemMessage(content=self.system_prompt))
        return result

    def _turn_key(self, who: RunIdentity | None, message: BaseMessage | None) -> tuple[str, ...] | None:
        """A turn: its user, thread and message, by id and by text (a client that sets message ids
        itself may reuse one in another thread or for another question)."""
        if not self.cache_turn or who is None or who.user_id is None or message is None or not message.id:
            return None
        asked = hashlib.sha256(_text(message).encode("utf-8", "surrogatepass")).hexdigest()
        return who.user_id, who.session_id or "", str(message.id), asked

    def _cached(self, key: tuple[str, ...] | None, signature: Any) -> str | None:
        """The turn's context, if every fact in it is still servable: computed while the user's
        memory was as it is now, not too long ago, before any of its facts expired (expiry changes
        no signature) and, on a server, with none changed by another process since."""
        if key is None or signature is None:
            return None
        with self._turns_lock:
            found = self._turns.get(key)
        if found is None or found.signature != signature \
                or time.monotonic() - found.computed_at >= TURN_MAX_AGE_S:
            return None
        if found.expires_first is not None and found.expires_first <= utcnow():
            return None
        if self.memory.mode != "embedded" and not found.unchanged_in(self._reread(found.records)):
            return None
        return found.text

    def _remember_turn(self, key: tuple[str, ...] | None, signature: Any,
                       records: list[MemoryRecord], text: str) -> None:
        if key is None or signature is None:
            return
        entry = _TurnContext(signature, time.monotonic(), records, text,
                             min((r.expires_at for r in records if r.expires_at is not None), default=None))
        with self._turns_lock:
            self._turns[key] = entry
            while len(self._turns) > TURN_CACHE_SIZE:
                self._turns.popitem(last=False)

    def _forget_turn(self, key: tuple[str, ...] | None) -> None:
        if key is not None:
            with self._turns_lock:
                self._turns.pop(key, None)

    def _prompt(self, state: Any, config: RunnableConfig) -> list[BaseMessage]:
        return self.context_messages(_messages_of(state), config)

    async def _aprompt(self, state: Any, config: RunnableConfig) -> list[BaseMessage]:
        return await asyncio.to_thread(self._prompt, state, config)

    def _pre_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        # Always returned: `llm_input_messages` is a persisted channel, and a stale one would be reused.
        # Being persisted, it keeps this context in the thread's checkpoints (see the module docstring).
        return {"llm_input_messages": self.context_messages(_messages_of(state), config)}

    async def _apre_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await asyncio.to_thread(self._pre_model, state, config)

    # -- after the answer -----------------------------------------------------------------------

    def observe_turn(self, messages: Sequence[BaseMessage], config: Mapping[str, Any] | None = None,
                     *, context: Any = None) -> bool:
        """Hand the finished turn (from the user's latest message to the final answer) to memory,
        in the background. False, and nothing scheduled, when the last message is not a final
        answer or the run names no user. Never raises."""
        if not messages or not is_final_answer(messages[-1]):
            return False
        who = self._identity(config, context)
        if who is None or who.user_id is None:
            return False
        start = _last_human(messages)
        self._forget_turn(self._turn_key(who, messages[start] if start is not None else None))
        turn = list(messages[start:] if start is not None else messages)
        # Captured now, as plain data: the graph may change its messages before the writer runs.
        captured = [{"role": m.type, "content": copy.deepcopy(m.content)} for m in turn
                    if m.id != CONTEXT_MESSAGE_ID and m.type in ("human", "ai", "tool", "system")
                    and not (isinstance(m, ToolMessage) and m.name in MEMORY_TOOL_NAMES)]
        number = sum(1 for m in messages if isinstance(m, HumanMessage) and m.id != CONTEXT_MESSAGE_ID)
        try:
            self.memory.observe(captured, user_id=who.user_id, session_id=who.session_id,
                                turn=number or None, memory=who.memory)
        except Exception:
            log.exception("could not hand the turn to memory; it is not remembered")
            return False
        return True

    def _post_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        self.observe_turn(_messages_of(state), config)
        return {}

    async def _apost_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        # observe() only queues work: running it on the loop costs microseconds, not a thread hop.
        return self._post_model(state, config)

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every turn handed to memory so far is stored (for tests and shutdown)."""
        self.memory.drain_writes(timeout)

    # -- langchain.agents -----------------------------------------------------------------------

    def middleware(self) -> Any:
        """The same hooks as `langchain.agents` middleware (needs `pip install langchain`):
        memory context around every model call, extraction when the agent finishes."""
        return _middleware_class()(self)


@dataclass(frozen=True)
class _TurnContext:
    """A turn's memory context and what it was made of, for its later model calls."""

    signature: Any
    computed_at: float  # time.monotonic()
    records: list[MemoryRecord]
    text: str
    expires_first: datetime | None

    def unchanged_in(self, stored: list[MemoryRecord]) -> bool:
        """Whether `stored` (the records read again) still holds every fact, unchanged and servable."""
        moment = utcnow()
        return [(r.id, r.version) for r in stored if r.is_servable(moment)] \
            == [(r.id, r.version) for r in self.records]


def _change_signature(memory: Memory, user_id: str) -> tuple[Any, ...] | None:
    """`memory.revision(user_id)` and the policy in force (turning memory off, or the profile on,
    changes no revision but must change the context at once), or None when they cannot be read,
    and then nothing is cached."""
    try:
        policy = memory.effective_policy().policy
        return (*memory.revision(user_id), policy.mode, policy.inject)
    except Exception:
        return None


def _config_or_none() -> Mapping[str, Any] | None:
    try:
        from langgraph.config import get_config

        return get_config()
    except RuntimeError:
        return None


_MIDDLEWARE: type | None = None


def _middleware_class() -> type:
    global _MIDDLEWARE
    if _MIDDLEWARE is not None:
        return _MIDDLEWARE
    try:
        from langchain.agents.middleware import AgentMiddleware
    except ImportError as exc:
        raise ImportError("MemoryHooks.middleware() needs the langchain package: pip install langchain") from exc

    class MnemicMemoryMiddleware(AgentMiddleware):
        """Memory context before each model call; the finished turn handed to memory at the end."""

        def __init__(self, hooks: MemoryHooks) -> None:
            super().__init__()
            self.hooks = hooks

        @property
        def name(self) -> str:
            return "MnemicMemory"

        def _with_context(self, request: Any) -> Any:
            context = getattr(request.runtime, "context", None) if request.runtime is not None else None
            messages = self.hooks.context_messages(request.messages, _config_or_none(), context=context)
            if self.hooks.system_prompt and messages and isinstance(messages[0], SystemMessage):
                messages = messages[1:]  # create_agent carries its own system prompt
            return request.override(messages=messages)

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(self._with_context(request))

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            return await handler(await asyncio.to_thread(self._with_context, request))

        def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            self.hooks.observe_turn(_messages_of(state), _config_or_none(),
                                    context=getattr(runtime, "context", None))
            return None

        async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return self.after_agent(state, runtime)

    _MIDDLEWARE = MnemicMemoryMiddleware
    return _MIDDLEWARE


__all__ = ["CONTEXT_MESSAGE_ID", "MemoryHooks", "is_final_answer"]

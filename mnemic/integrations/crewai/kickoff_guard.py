"""The check run at every Crew and Flow kickoff that uses a CrewMemory.

It re-attaches memories CrewAI rebuilt (see `attach.py`), makes `read_only` follow the memory
policy, and refuses (HookAborted, raised from `kickoff()`) a run whose memory cannot know whose
memory it is:

- a crew or flow kickoff with no user (none in the inputs, the flow's state, `for_user()` or the
  CrewMemory): CrewAI would swallow each memory call's error and the run would silently remember
  nothing, or a lesson would be dropped with a traceback in the log;
- a kickoff of a crew or flow object already running for another user in another thread
  (concurrent `kickoff_async`): the runs share that object's tasks and state, so a task can hold
  the other run's text and nothing tells mnemic whose it is;
- a crew whose tasks still hold the text an earlier kickoff filled in and would not be filled in
  again: `Crew.copy()` (used by `kickoff_for_each`) copies a task's filled-in description instead
  of its template (a CrewAI bug), so every copy of a crew that already ran works on the previous
  run's inputs. To tell, the texts kickoffs filled in are remembered (as hashes) when they end;
- a kickoff of a crew or flow restored from another user's checkpoint, or of a flow object that
  last ran for another user: a flow keeps its state between kickoffs (CrewAI's design), so the
  run would start from the other user's state.

A memory that cannot be used (closed, unreachable) refuses the kickoff too: CrewAI would only log
each failed call. Once the user is known, a crew kickoff resumes the kickoff its crew object holds
only when that one is unfinished and was the same user's (`resumption.py`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from crewai.hooks.dispatch import HookAborted
from crewai.memory.memory_scope import MemoryScope, MemorySlice

from . import context, resumption
from .attach import reattach
from .identity import DetachedMemoryError
from .memory import CrewMemory
from .task_turn import template_of

STALE_TASK = (
    "mnemic: task {task} of this crew still holds the text an earlier kickoff filled in, so this run "
    "would work on that run's inputs, not on its own (CrewAI's Crew.copy(), which kickoff_for_each "
    "uses, copies a task's filled-in description instead of its template). Build the crew afresh for "
    "these runs, or call kickoff_for_each on a crew that has not been kicked off."
)
FLOW_OF_ANOTHER_USER = (
    "mnemic: this flow object last ran for another user than {user!r}. A flow keeps its state from one "
    "kickoff to the next, so this run would start from that user's state. Build a flow object per "
    "user (or per run)."
)
RESTORED_FOR_ANOTHER_USER = (
    "mnemic: this {kind} was restored from a checkpoint of another user than {user!r}: it holds that "
    "run's {holds}. Restore the {kind} for that user, or build a new {kind} for this one"
)
BUSY = (
    "mnemic: this {kind} is already running for another user in another thread. Concurrent kickoffs "
    "of one {kind} object share its tasks and state, so mnemic could not tell whose memory a task's "
    "text belongs to. Give each concurrent run its own object (crew.copy() before kickoff_async, or "
    "build one per run)."
)
_FILLED_KEPT = 4096


class _FilledTexts:
    """Hashes of the task descriptions kickoffs filled in with their inputs (bounded)."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def add(self, text: str) -> None:
        with self._lock:
            self._seen[self._key(text)] = None
            self._seen.move_to_end(self._key(text))
            while len(self._seen) > _FILLED_KEPT:
                self._seen.popitem(last=False)

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        with self._lock:
            return self._key(text) in self._seen


_filled = _FilledTexts()


def check_kickoff(owner: Any, inputs: Mapping[str, Any]) -> None:
    """Registered with `context.install`: raises HookAborted to refuse the kickoff."""
    try:
        _prepare_kickoff(owner, inputs)
    except HookAborted:
        raise
    except Exception as exc:
        raise HookAborted(f"mnemic: {type(exc).__name__}: {exc}", source="mnemic") from exc


def kickoff_ended(owner: Any) -> None:
    """Registered with `context.install`: remember the task texts this crew's kickoff filled in."""
    for task in getattr(owner, "tasks", None) or []:
        description = getattr(task, "description", None)
        if isinstance(description, str) and description != template_of(task):
            _filled.add(description)


def _prepare_kickoff(owner: Any, inputs: Mapping[str, Any]) -> None:
    try:
        reattach(owner)
    except DetachedMemoryError as exc:
        raise HookAborted(f"mnemic: {exc}", source="mnemic") from exc
    is_crew = hasattr(owner, "tasks") and hasattr(owner, "agents")
    kick = context.current_kickoff()
    seen: set[int] = set()
    first: CrewMemory | None = None
    flow_user: str | None = None
    for _, _, current in context.iter_memories(owner):
        mem = current._memory if isinstance(current, (MemoryScope, MemorySlice)) else current
        if not isinstance(mem, CrewMemory) or id(mem) in seen:
            continue
        seen.add(id(mem))
        first = first or mem
        mem.refresh_read_only()
        if mem.policy_mode() == "off":
            continue  # off uses no memory: nobody's memory can be mixed up
        try:
            user = mem.current_user_id()
        except (TypeError, ValueError) as exc:
            raise HookAborted(f"mnemic: bad user in kickoff inputs: {exc}", source="mnemic") from exc
        if user is None:
            raise HookAborted("mnemic: " + mem.missing_user_message(), source="mnemic")
        _refuse_a_second_user(owner, kick, mem, user, kind="crew" if is_crew else "flow")
        if is_crew:
            restored = resumption.restored_for(owner, mem.user_key)
        else:
            restored = resumption.restored_flow_for(owner, mem.user_key)
        if restored is not None:
            resumption.mark_restored(owner, restored)  # it stays that user's after it runs here
        if restored is not None and restored != user:
            raise HookAborted(RESTORED_FOR_ANOTHER_USER.format(
                kind="crew" if is_crew else "flow", user=user,
                holds="inputs and task texts" if is_crew else "state and method outputs"), source="mnemic")
        if not is_crew:
            served = resumption.flow_user(owner)
            if served is not None and served != user:
                raise HookAborted(FLOW_OF_ANOTHER_USER.format(user=user), source="mnemic")
            flow_user = flow_user or user
        if is_crew and inputs:
            _refuse_stale_tasks(owner)
    if is_crew and first is not None:
        # Under every policy, "off" included: what a resumed kickoff returns is the earlier run's output.
        try:
            resuming_for = first.current_user_id()
        except (TypeError, ValueError):
            resuming_for = None
        resumption.settle(owner, resuming_for, first.user_key)
        resumption.note_kickoff(owner)
    if flow_user is not None:
        resumption.note_flow_kickoff(owner, flow_user)


def _refuse_a_second_user(owner: Any, kick: context.Kickoff | None, mem: CrewMemory, user: str, *,
                          kind: str) -> None:
    label = f"user:{id(mem)}"
    for other in context.in_flight(owner):
        if other is kick:
            continue
        if other.labels.get(label, user) != user:
            raise HookAborted(BUSY.format(kind=kind), source="mnemic")
    if kick is not None and kick.owner is owner:
        kick.labels[label] = user


def _refuse_stale_tasks(crew: Any) -> None:
    for number, task in enumerate(getattr(crew, "tasks", None) or [], start=1):
        # A task CrewAI will fill in from its template is fine; one with no template of its own
        # whose text an earlier kickoff filled in is a copy that will never be filled in again.
        if getattr(task, "_original_description", None) is None and getattr(task, "description", None) in _filled:
            # Named by position, never by its text: that holds the earlier run's inputs.
            raise HookAborted(STALE_TASK.format(task=getattr(task, "name", None) or f"#{number}"), source="mnemic")


__all__ = ["BUSY", "FLOW_OF_ANOTHER_USER", "RESTORED_FOR_ANOTHER_USER", "STALE_TASK", "check_kickoff",
           "kickoff_ended"]

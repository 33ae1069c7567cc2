"""Whether a crew kickoff resumes the kickoff its crew object holds, or starts a new one.

CrewAI marks a crew for resumption with `checkpoint_kickoff_event_id`: it is set on a crew
restored from a checkpoint, and also on every crew object whose kickoff wrote a checkpoint (the
writer copies the kickoff's id into the crew it serialises). CrewAI never clears it. Every later
kickoff of that object then "resumes": it skips each task that has an output and returns those
outputs without running anything, so one crew object serving alice then bob hands bob alice's
answers. A replay on such an object likewise starts after the last task with an output.

mnemic keeps resumption to what it is for, finishing an unfinished kickoff for its own user:
- once a kickoff of the object completed, the next one starts anew;
- a kickoff for another user than the held kickoff's (the user in its saved inputs; an unknown
  one counts as another) starts anew: another user's outputs are never its context or result;
- a replay never resumes: it says itself which task to start from.
Starting anew clears the marker, the held kickoff's id and the tasks' outputs, so CrewAI announces
a new kickoff with a new id (a new run in the kickoff log) and runs every task. The checkpoint the
held kickoff was restored from stays where it is: its user can restore it again.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("mnemic.crewai")

class _PerObject:
    """A value per live object. Crews are pydantic models, not hashable, so a WeakKeyDictionary
    cannot hold them: entries are keyed by id, with a weak reference that tells a new object
    reusing an id from the one the entry was made for."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], Any]] = {}
        self._lock = threading.Lock()

    def set(self, owner: Any, value: Any) -> None:
        with self._lock:
            for key in [k for k, (ref, _) in self._entries.items() if ref() is None]:
                del self._entries[key]
            self._entries[id(owner)] = (weakref.ref(owner), value)

    def get(self, owner: Any) -> Any | None:
        with self._lock:
            entry = self._entries.get(id(owner))
        return entry[1] if entry is not None and entry[0]() is owner else None

    def discard(self, owner: Any) -> None:
        with self._lock:
            self._entries.pop(id(owner), None)


# The kickoff each crew object last completed.
_completed = _PerObject()
# The user each crew object restored from a checkpoint was restored for (the checkpoint's user).
_restored = _PerObject()
# Crew and flow objects that kicked off in this process: a marked object that never did came from a checkpoint.
_ran_here = _PerObject()
# The user each flow object last kicked off for (a flow keeps its state from one kickoff to the next).
_flow_users = _PerObject()


def mark_restored(crew: Any, user_id: str) -> None:
    """Record that `crew` was restored from `user_id`'s checkpoint. Such an object carries that
    kickoff's filled-in task descriptions, inputs and event record: it runs for that user only."""
    _restored.set(crew, user_id)


def note_kickoff(crew: Any) -> None:
    _ran_here.set(crew, True)


def restored_for(crew: Any, user_key: str) -> str | None:
    """The user whose checkpoint `crew` was restored from (by `restore_crew` or CrewAI's own
    `Crew.from_checkpoint`: a crew marked for resumption that never kicked off here), or None."""
    restored = _restored.get(crew)
    if restored is not None:
        return str(restored)
    if held_kickoff(crew) is None or _ran_here.get(crew):
        return None
    saved = getattr(crew, "checkpoint_inputs", None)
    owner = saved.get(user_key) if isinstance(saved, Mapping) else None
    return str(owner) if owner is not None else None


def restored_flow_for(flow: Any, user_key: str) -> str | None:
    """The user whose checkpoint `flow` was restored from (CrewAI's `Flow.from_checkpoint` puts
    the saved state in `checkpoint_state`; an object that kicked off here is past its restore),
    read from the state's user field, or None when it names nobody."""
    restored = _restored.get(flow)
    if restored is not None:
        return str(restored)
    if _ran_here.get(flow):
        return None
    state = getattr(flow, "checkpoint_state", None)
    owner = state.get(user_key) if isinstance(state, Mapping) else None
    return str(owner) if owner is not None else None


def flow_user(flow: Any) -> str | None:
    """The user `flow` last kicked off for in this process, or None."""
    return _flow_users.get(flow)


def note_flow_kickoff(flow: Any, user_id: str) -> None:
    _ran_here.set(flow, True)
    _flow_users.set(flow, user_id)


def held_kickoff(crew: Any) -> str | None:
    """The kickoff a kickoff of `crew` would resume (CrewAI's marker), or None."""
    value = getattr(crew, "checkpoint_kickoff_event_id", None)
    return str(value) if value is not None else None


def mark_completed(crew: Any) -> None:
    """Record that `crew`'s current kickoff (or replay) completed: nothing is left to resume."""
    kickoff_id = getattr(crew, "_kickoff_event_id", None)
    if kickoff_id:
        _completed.set(crew, str(kickoff_id))


def _completed_here(crew: Any, kickoff_id: str) -> bool:
    return _completed.get(crew) == kickoff_id


def start_anew(crew: Any) -> None:
    """Make the next kickoff or replay of `crew` a new one: no marker, no held kickoff id, no task
    output left from before (a task that then fails must not leave an older output to resume)."""
    crew.checkpoint_kickoff_event_id = None
    # CrewAI announces a new kickoff (and gives it a new id) only when this is empty.
    crew._kickoff_event_id = None
    for task in list(getattr(crew, "tasks", None) or []):
        task.output = None
    _completed.discard(crew)


def settle(crew: Any, user_id: str | None, user_key: str) -> bool:
    """Called as a kickoff of `crew` starts, once its user is known: let it resume the held
    kickoff only when that kickoff is unfinished and was `user_id`'s; else start anew. Returns
    whether it was made to start anew."""
    held = held_kickoff(crew)
    if held is None:
        return False
    saved = getattr(crew, "checkpoint_inputs", None)
    owner = saved.get(user_key) if isinstance(saved, Mapping) else None
    owner = str(owner) if owner is not None else None
    if _completed_here(crew, held):
        reason = "it completed"
    elif owner != user_id:
        reason = "it ran for another user" if owner is not None else "its user is unknown"
    else:
        return False
    log.info("mnemic: crew %r starts a new kickoff instead of resuming kickoff %s (%s)",
             getattr(crew, "name", None) or "crew", held, reason)
    start_anew(crew)
    return True


__all__ = ["flow_user", "held_kickoff", "mark_completed", "note_flow_kickoff", "restored_flow_for", "settle",
           "start_anew"]

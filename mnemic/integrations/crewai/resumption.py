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

# The kickoff each crew object (by id) last completed, with a weak reference to tell a new object
# reusing the id from the one that completed.
_completed: dict[int, tuple[weakref.ref[Any], str]] = {}
_lock = threading.Lock()


# The user each crew object restored from a checkpoint was restored for (the checkpoint's user).
_restored: dict[int, tuple[weakref.ref[Any], str]] = {}


def mark_restored(crew: Any, user_id: str) -> None:
    """Record that `crew` was restored from `user_id`'s checkpoint. Such an object carries that
    kickoff's filled-in task descriptions, inputs and event record: it runs for that user only."""
    with _lock:
        for key in [k for k, (ref, _) in _restored.items() if ref() is None]:
            del _restored[key]
        _restored[id(crew)] = (weakref.ref(crew), user_id)


# Crew objects that kicked off in this process: a marked object that never did came from a checkpoint.
_ran_here: dict[int, weakref.ref[Any]] = {}


def note_kickoff(crew: Any) -> None:
    with _lock:
        for key in [k for k, ref in _ran_here.items() if ref() is None]:
            del _ran_here[key]
        _ran_here[id(crew)] = weakref.ref(crew)


def restored_for(crew: Any, user_key: str) -> str | None:
    """The user whose checkpoint `crew` was restored from (by `restore_crew` or CrewAI's own
    `Crew.from_checkpoint`: a crew marked for resumption that never kicked off here), or None."""
    with _lock:
        entry = _restored.get(id(crew))
        ran = _ran_here.get(id(crew))
    if entry is not None and entry[0]() is crew:
        return entry[1]
    if held_kickoff(crew) is None or (ran is not None and ran() is crew):
        return None
    saved = getattr(crew, "checkpoint_inputs", None)
    owner = saved.get(user_key) if isinstance(saved, Mapping) else None
    return str(owner) if owner is not None else None


def held_kickoff(crew: Any) -> str | None:
    """The kickoff a kickoff of `crew` would resume (CrewAI's marker), or None."""
    value = getattr(crew, "checkpoint_kickoff_event_id", None)
    return str(value) if value is not None else None


def mark_completed(crew: Any) -> None:
    """Record that `crew`'s current kickoff (or replay) completed: nothing is left to resume."""
    kickoff_id = getattr(crew, "_kickoff_event_id", None)
    with _lock:
        for key in [k for k, (ref, _) in _completed.items() if ref() is None]:
            del _completed[key]
        if kickoff_id:
            _completed[id(crew)] = (weakref.ref(crew), str(kickoff_id))


def _completed_here(crew: Any, kickoff_id: str) -> bool:
    with _lock:
        entry = _completed.get(id(crew))
    return entry is not None and entry[0]() is crew and entry[1] == kickoff_id


def start_anew(crew: Any) -> None:
    """Make the next kickoff or replay of `crew` a new one: no marker, no held kickoff id, no task
    output left from before (a task that then fails must not leave an older output to resume)."""
    crew.checkpoint_kickoff_event_id = None
    # CrewAI announces a new kickoff (and gives it a new id) only when this is empty.
    crew._kickoff_event_id = None
    for task in list(getattr(crew, "tasks", None) or []):
        task.output = None
    with _lock:
        _completed.pop(id(crew), None)


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


__all__ = ["held_kickoff", "mark_completed", "settle", "start_anew"]

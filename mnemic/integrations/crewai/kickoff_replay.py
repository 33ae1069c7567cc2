"""Replay a crew from a task of any kickoff mnemic kept, as the user that kickoff was for.

    from mnemic.integrations.crewai import replay

    result = crew.kickoff(inputs={"user_id": "alice", ...})
    crew.replay(task_id)                                   # this crew's latest kickoff, even after others ran
    replay(crew, task_id, kickoff_id=result.kickoff_id)    # any stored kickoff of this crew
    replay(crew, task_id, inputs={"user_id": "alice", ...})  # alice's latest kickoff holding that task

CrewAI replays only the latest kickoff of any crew (one table, cleared at every kickoff), and its
`replay()` runs without the kickoff hooks, so a memory never learns whose run it is (recall fails
with UnknownUserError, which CrewAI swallows). With a CrewMemory, `crew.replay` goes through
`replay()` here: the kickoff comes from mnemic's run log (`checkpoints/crewai_kickoffs.py`), the
replay runs as that kickoff's user (recall and storage included) and is recorded as a new kickoff.

`task_id` may be the id stored with the kickoff (`mnemic kickoffs show`) or the id of the crew's
own task at that position, so a crew object built in another process replays too. A replay for
another user than the kickoff's is refused: the kickoff's outputs are that user's data. The run
log holds no secret (`core.runs`), so a replay sees "[redacted secret]" where a kickoff's inputs or
outputs held one; pass `inputs=` to give inputs again. A replay never resumes what the crew object
holds from its last kickoff (`resumption.py`): the tasks from `task_id` on run again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from crewai import Crew
from crewai.crews.crew_output import CrewOutput
from crewai.crews.utils import setup_agents

from ...checkpoints.crewai_kickoffs import crew_group
from ...core.runs import Run, RunLog
from ...core.validation import check_user_id
from . import context, resumption
from .attach import reattach
from .persistence import crew_memory_of, kickoff_store
from .users import UnknownUserError

_original_replay: Callable[..., CrewOutput] | None = None
_patch_lock = threading.Lock()


def _find_source(runs: RunLog, crew: Any, task_id: str, kickoff_id: str | None, user: str | None) -> Run:
    group = crew_group(crew)
    name = getattr(crew, "name", None) or "crew"
    if kickoff_id is not None:
        run = runs.get(kickoff_id)
        if run is None:
            raise ValueError(f"no stored kickoff {kickoff_id}: it was never recorded, or was pruned or erased "
                             "(see `mnemic kickoffs list`)")
        if run.group != group:
            raise ValueError(f"kickoff {kickoff_id} was run by crew {run.group_name!r} (key {run.group}), not by "
                             f"this crew {name!r} (key {group}): replay it with the crew that ran it")
        return run
    candidates = [r for r in runs.holding_step(task_id) if r.group == group]
    if not candidates and task_id in {str(t.id) for t in crew.tasks}:
        candidates = runs.runs(group=group)
    if user is not None:
        own = [r for r in candidates if r.user_id in (user, None)]
        if candidates and not own:
            raise PermissionError(f"no kickoff of crew {name!r} holding task {task_id} was for user {user!r}; "
                                  "a kickoff is replayed only for the user it ran for")
        candidates = own
    if not candidates:
        raise ValueError(f"Task with id {task_id} not found in any kickoff of crew {name!r} that mnemic kept "
                         "(see `mnemic kickoffs list --crew ...`)")
    found = runs.get(candidates[0].run_id)
    assert found is not None
    return found


def _start_index(crew: Any, source: Run, task_id: str) -> int:
    for step in source.steps:
        if step.output.get("task_id") == task_id:
            return step.index
    for index, task in enumerate(crew.tasks):
        if str(task.id) == task_id:
            return index
    raise ValueError(f"Task with id {task_id} is not in kickoff {source.run_id} nor in this crew's tasks")


def _set_up_agents(crew: Any) -> None:
    """Give agents their crew, as a kickoff does: CrewAI's replay skips that step, so a crew
    object that never ran (rebuilt after a restart) would replay with agents that have no crew,
    hence no crew memory and no recall."""
    agents = [a for a in [*crew.agents, *(t.agent for t in crew.tasks if t.agent is not None)]
              if getattr(a, "crew", None) is not crew]
    if agents:
        setup_agents(crew, list({id(a): a for a in agents}.values()), crew.embedder, crew.function_calling_llm,
                     crew.step_callback)


def _requested_user(memory: Any, inputs: Mapping[str, Any] | None) -> str | None:
    """The user the replay is for. Inside `for_user()` memory acts for that user whatever the
    inputs say, so inputs naming another one would pick that user's kickoff and replay it into
    this one's memory: refused."""
    named = check_user_id(inputs[memory.user_key]) if inputs is not None and inputs.get(memory.user_key) is not None \
        else None
    acting = memory.for_user_id()
    if named is not None and acting is not None and named != acting:
        raise PermissionError(f"this replay runs inside for_user({acting!r}) but its inputs name user {named!r}; a "
                              "kickoff is replayed only for the user it ran for, so name one user")
    return named or memory.current_user_id()


def replay(crew: Any, task_id: str, kickoff_id: str | None = None,
           inputs: Mapping[str, Any] | None = None) -> CrewOutput:
    """Replay `crew` from task `task_id` of a kickoff mnemic kept: `kickoff_id`'s, else the latest
    of this crew that holds the task (for the requested user, when `inputs`, `for_user()` or a
    bound user names one). Tasks before it reuse the kickoff's outputs; the rest run again, as the
    kickoff's user. `inputs` replaces the kickoff's inputs (CrewAI's meaning)."""
    if _original_replay is None:
        install()
    reattach(crew)
    memory = crew_memory_of(crew)
    if memory is None:
        raise TypeError("mnemic's replay() needs a crew whose memory is a mnemic CrewMemory; "
                        "use crew.replay(task_id) for any other crew")
    handler = kickoff_store(crew, memory)
    if handler is None:
        raise ValueError("this crew's CrewMemory keeps no kickoffs (keep_kickoffs=0), so none can be replayed")
    task_id = str(task_id)
    requested = _requested_user(memory, inputs)
    source = _find_source(handler.runs, crew, task_id, kickoff_id, requested)
    if requested is not None and source.user_id is not None and requested != source.user_id:
        raise PermissionError(f"kickoff {source.run_id} ran for another user than {requested!r}; a kickoff is "
                              "replayed only for the user it ran for")
    user = requested or source.user_id
    memory.refresh_read_only()  # as at a kickoff: the policy may have changed since
    if user is None and memory.policy_mode() != "off":
        raise UnknownUserError(memory.missing_user_message())
    replay_inputs = dict(inputs) if inputs is not None else dict(source.inputs)
    if user is not None:
        replay_inputs[memory.user_key] = user
    index = _start_index(crew, source, task_id)
    if index >= len(crew.tasks):
        raise ValueError(f"kickoff {source.run_id} has more tasks than this crew; it cannot be replayed here")
    _set_up_agents(crew)
    # A crew object that ran with checkpoints is marked for resumption, and CrewAI's replay then
    # starts after the last task holding an output: the outputs of the object's last kickoff,
    # perhaps another user's. A replay starts where it is told.
    resumption.start_anew(crew)
    token = handler.pin(source)
    try:
        with context.bound_kickoff(crew, replay_inputs):
            assert _original_replay is not None
            return _original_replay(crew, str(crew.tasks[index].id), replay_inputs)
    finally:
        handler.unpin(token)


def _replay_method(self: Crew, task_id: str, inputs: dict[str, Any] | None = None) -> CrewOutput:
    """`Crew.replay`, through mnemic's replay for a crew whose memory is a CrewMemory."""
    reattach(self)
    if crew_memory_of(self) is None:
        assert _original_replay is not None
        return _original_replay(self, task_id, inputs)
    return replay(self, task_id, inputs=inputs)


def install() -> None:
    """Route `Crew.replay` through mnemic for crews with a CrewMemory (others are untouched).

    CrewAI offers no hook around replay, and the crew objects a replay is called on are built by
    the application, so the method itself is wrapped, once per process."""
    global _original_replay
    with _patch_lock:
        if _original_replay is not None:
            return
        _original_replay = Crew.replay
        Crew.replay = _replay_method  # type: ignore[method-assign]


__all__ = ["install", "replay"]

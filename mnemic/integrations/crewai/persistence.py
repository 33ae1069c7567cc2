"""What a crew with a CrewMemory saves besides memory: its kickoffs' outputs and its checkpoints.

Installed once per process with the rest of the integration (`install()`), and idle for crews
that use no CrewMemory:

- at each crew kickoff, the crew's task-output store becomes mnemic's `KickoffOutputs` (every
  kickoff kept per crew, for replay), and the crew writes checkpoints with mnemic's provider for
  the format it chose: CrewAI's stock providers (its default when `CheckpointConfig` names none,
  and the one it rebuilds for a restored crew) record no owner, so `forget(user_id=)` could not
  find a user's checkpoints; their SQLite flavour also fails on SQLite < 3.45 and their JSON
  flavour is not atomic. A provider of the application's own is left alone;
- the user a CrewMemory serves is written into the kickoff's inputs when they do not name one,
  so checkpoints and kickoff records carry it and a restored crew comes back to the same user;
- checkpoint writers learn the owner of what they save from the running kickoff (`resolve_owner`);
- a checkpoint or kickoff record that failed to save is not just a log line: the crew's result is
  a `MnemicCrewOutput` whose `persistence_failures` lists them (CrewAI also emits its
  `CheckpointFailedEvent`), and `kickoff_id` names the kickoff's record for `replay`.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

from crewai.crews.crew_output import CrewOutput
from crewai.events.base_events import BaseEvent
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.checkpoint_events import CheckpointFailedEvent
from crewai.hooks.dispatch import InterceptionPoint, register
from crewai.memory.memory_scope import MemoryScope, MemorySlice
from crewai.state.checkpoint_config import CheckpointConfig
from crewai.state.provider.json_provider import JsonProvider
from crewai.state.provider.sqlite_provider import SqliteProvider
from pydantic import BaseModel, Field

from ...checkpoints import crewai_db
from ...checkpoints.crewai_json import JsonCheckpointProvider
from ...checkpoints.crewai_kickoffs import KickoffOutputs
from ...checkpoints.crewai_sqlite import SqliteCheckpointProvider
from ...checkpoints.owners import Owner, set_owner_resolver, stamped_user, tail_of, user_named
from . import context, resumption
from .memory import CrewMemory

log = logging.getLogger("mnemic.crewai")

MNEMIC_PROVIDERS = (JsonCheckpointProvider, SqliteCheckpointProvider)


class PersistenceFailure(BaseModel):
    """Something a kickoff should have saved and did not: a checkpoint or a task's output record."""

    what: str
    error: str
    location: str | None = None
    task: str | None = None


class MnemicCrewOutput(CrewOutput):
    """CrewAI's result, plus what mnemic saved for it. A crew can finish with a non-empty
    `persistence_failures`: check it before relying on a checkpoint or a replay of this kickoff."""

    kickoff_id: str | None = Field(default=None, description="This kickoff's record, for replay(kickoff_id=...).")
    persistence_failures: list[PersistenceFailure] = Field(default_factory=list)


# -- the crew's CrewMemory ------------------------------------------------------------------------


def crew_memory_of(owner: Any) -> CrewMemory | None:
    """The CrewMemory a crew or flow uses (the crew's own first, then its agents')."""
    for _, _, candidate in context.iter_memories(owner):
        if isinstance(candidate, (MemoryScope, MemorySlice)):
            candidate = getattr(candidate, "_memory", None)
        if isinstance(candidate, CrewMemory):
            return candidate
    return None


def resolve_owner(user_key: str = "user_id") -> Owner | None:
    """Whose state is being saved now: the user of the innermost kickoff that uses a CrewMemory;
    with none, the user the innermost kickoff's inputs name under `user_key` (a flow persisted
    with `FlowStatePersistence(memory=...)` need not use a CrewMemory itself, and must not load
    another user's state for want of one, whatever key its state names the user by)."""
    kickoffs = context.kickoffs()
    for kick in reversed(kickoffs):
        memory = crew_memory_of(kick.owner)
        if memory is None:
            continue
        try:
            user = memory.current_user_id()
        except (TypeError, ValueError):
            user = None
        return Owner(user_id=user, memory=memory.mnemic, user_key=memory.user_key)
    named = user_named(kickoffs[-1].inputs.get(user_key)) if kickoffs else None
    return Owner(user_id=named) if named is not None else None


# -- failures, reported on the crew's result -------------------------------------------------------

_failures: dict[int, tuple[weakref.ref[Any], list[PersistenceFailure]]] = {}
_failures_lock = threading.Lock()


def record_failure(owner: Any, failure: PersistenceFailure) -> None:
    with _failures_lock:
        for key in [k for k, (ref, _) in _failures.items() if ref() is None]:
            del _failures[key]
        entry = _failures.get(id(owner))
        if entry is None or entry[0]() is not owner:
            entry = (weakref.ref(owner), [])
            _failures[id(owner)] = entry
        entry[1].append(failure)


def take_failures(owner: Any) -> list[PersistenceFailure]:
    with _failures_lock:
        entry = _failures.pop(id(owner), None)
    return list(entry[1]) if entry is not None and entry[0]() is owner else []


def _on_checkpoint_failed(source: Any, event: BaseEvent) -> None:
    # Runs on the event bus's pool in a copy of the writer's context, so the kickoff is known.
    kick = context.current_crew_kickoff() or context.current_kickoff()
    if kick is None or not isinstance(event, CheckpointFailedEvent):
        return
    record_failure(kick.owner, PersistenceFailure(what="checkpoint", error=event.error, location=event.location,
                                                  task=getattr(event, "task_name", None)))


# -- kickoff records -------------------------------------------------------------------------------


def kickoff_store(crew: Any, memory: CrewMemory) -> KickoffOutputs | None:
    """The crew's KickoffOutputs, installed on first use (None when the CrewMemory keeps none)."""
    handler = getattr(crew, "_task_output_handler", None)
    if isinstance(handler, KickoffOutputs) and handler.runs is memory.mnemic.runs:
        return handler
    keep = memory.keep_kickoffs
    if keep == 0:
        return None

    def report(what: str, exc: BaseException) -> None:
        record_failure(crew, PersistenceFailure(what=what, error=f"{type(exc).__name__}: {exc}"))

    def user_of() -> str | None:
        try:
            return memory.current_user_id()
        except (TypeError, ValueError):
            return None

    def inputs_of() -> dict[str, Any] | None:
        for kick in reversed(context.kickoffs()):
            if kick.owner is crew:
                return dict(kick.inputs)
        return None

    handler = KickoffOutputs(crew, memory.mnemic.runs, user_of=user_of, inputs_of=inputs_of, keep=keep,
                             on_failure=report)
    crew._task_output_handler = handler
    return handler


# -- checkpoints ------------------------------------------------------------------------------------


def _mnemic_provider_for(provider: Any, location: str | None) -> Any | None:
    if isinstance(provider, MNEMIC_PROVIDERS):
        return None
    # Only CrewAI's own providers, matched by exact type: a subclass is the application's. CrewAI
    # rebuilds a JsonProvider for a restored crew whatever the format, so the location decides.
    if type(provider) is SqliteProvider or (type(provider) is JsonProvider and location
                                            and crewai_db.is_database(location)):
        return SqliteCheckpointProvider()
    if type(provider) is JsonProvider:
        return JsonCheckpointProvider()
    return None  # a provider of the application's own: left alone


def keep_mnemic_checkpointing(crew: Any, config: CheckpointConfig | None = None) -> None:
    """Checkpoint with mnemic's provider: the one in `config` when it is mnemic's, else mnemic's
    provider for the format of CrewAI's stock one (its default, or rebuilt after a restore)."""
    current = getattr(crew, "checkpoint", None)
    if not isinstance(current, CheckpointConfig):
        return
    chosen = config.provider if config is not None and isinstance(config.provider, MNEMIC_PROVIDERS) else \
        _mnemic_provider_for(current.provider, current.location)
    if chosen is not None:
        crew.checkpoint = current.model_copy(update={"provider": chosen})


def checkpointed_user(location: str) -> str | None:
    """The user stamped into a checkpoint by mnemic's providers (None for others')."""
    try:
        if crewai_db.is_database(location.split("#", 1)[0]):
            path, checkpoint_id = crewai_db.split_location(location)
            return stamped_user(crewai_db.read(path, checkpoint_id)[-4096:])
        with open(location, "rb") as handle:
            return stamped_user(tail_of(handle.read()))
    except (OSError, ValueError) as exc:
        log.warning("could not read the user of checkpoint %s: %s", location, exc)
        return None


def restore_user(crew: Any, location: str) -> None:
    """Give a restored crew the user its checkpoint was written for, unless its inputs name one."""
    memory = crew_memory_of(crew)
    user = checkpointed_user(location) if memory is not None else None
    if memory is None or user is None:
        return
    resumption.mark_restored(crew, user)
    inputs = crew.checkpoint_inputs if isinstance(crew.checkpoint_inputs, dict) else {}
    if inputs.get(memory.user_key) is None:
        inputs[memory.user_key] = user
        crew.checkpoint_inputs = inputs
        crew._inputs = inputs


def after_restore(crew: Any, config: CheckpointConfig) -> None:
    """What `restore_crew` does besides re-attaching memory: mnemic's provider and the user."""
    keep_mnemic_checkpointing(crew, config)
    if config.restore_from is not None:
        restore_user(crew, str(config.restore_from))


# -- the hooks ---------------------------------------------------------------------------------------


def _on_execution_start(ctx: Any) -> None:
    crew = getattr(ctx, "crew", None)
    if crew is None:
        return None
    take_failures(crew)  # a new kickoff reports only its own
    memory = crew_memory_of(crew)
    if memory is None:
        return None
    keep_mnemic_checkpointing(crew)
    payload = getattr(ctx, "payload", None)
    if isinstance(payload, dict) and payload.get(memory.user_key) is None:
        try:
            user = memory.current_user_id()
        except (TypeError, ValueError):
            user = None
        if user is not None:
            payload[memory.user_key] = user
    kickoff_store(crew, memory)
    return None


def _uses_mnemic(crew: Any) -> bool:
    checkpoint = getattr(crew, "checkpoint", None)
    return crew_memory_of(crew) is not None or (
        isinstance(checkpoint, CheckpointConfig) and isinstance(checkpoint.provider, MNEMIC_PROVIDERS))


def _on_execution_end(ctx: Any) -> None:
    crew = getattr(ctx, "crew", None)
    output = getattr(ctx, "payload", None)
    if crew is None or not isinstance(output, CrewOutput) or not _uses_mnemic(crew):
        return None
    resumption.mark_completed(crew)  # its next kickoff has nothing to resume
    # The last task's checkpoint is written on the event bus's pool; a failed one emits an event
    # whose handler runs there too: wait for both rounds before reading the failures.
    crewai_event_bus.flush()
    crewai_event_bus.flush()
    failures = take_failures(crew)
    for failure in failures:
        log.warning("mnemic: %s was not saved (%s): %s", failure.what, failure.location or "-", failure.error)
    handler = getattr(crew, "_task_output_handler", None)
    kickoff_id = handler.current_run_id() if isinstance(handler, KickoffOutputs) else None
    fields = {name: getattr(output, name) for name in CrewOutput.model_fields}
    ctx.payload = MnemicCrewOutput.model_construct(**fields, kickoff_id=kickoff_id,
                                                   persistence_failures=failures)
    return None


_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Register the hooks, the failure listener and the owner resolver (once per process)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        register(InterceptionPoint.EXECUTION_START, _on_execution_start)
        register(InterceptionPoint.EXECUTION_END, _on_execution_end)
        crewai_event_bus.register_handler(CheckpointFailedEvent, _on_checkpoint_failed)
        set_owner_resolver(resolve_owner)
        _installed = True


__all__ = [
    "MnemicCrewOutput",
    "PersistenceFailure",
    "after_restore",
    "crew_memory_of",
    "install",
    "keep_mnemic_checkpointing",
    "kickoff_store",
    "resolve_owner",
]

"""Where a CrewAI run is: which kickoff (crew or flow, with its inputs) and which step (task or
flow method) the current thread is executing.

CrewAI hands a memory object no caller context: `recall(query, limit=5)` does not say which crew,
kickoff, agent or user it is for. Its interception hooks do: EXECUTION_START/END bracket every
Crew and Flow kickoff (with the inputs) and PRE_STEP/POST_STEP every task and flow method, and all
four run synchronously in the thread that then does the work. So the hooks record that context in
contextvars, which follow CrewAI into the threads it starts (it copies the context for async
tasks, flow methods and human-feedback steps).

Event-bus listeners cannot do this job: their handlers run on the bus's thread pool, so they
cannot set anything for the kickoff's own thread, and a kickoff resumed from a checkpoint emits
no CrewKickoffStartedEvent at all.

A task step also holds what the task would teach (`hold_until_step_passes`): CrewAI hands a
task's answer to memory as soon as the agent gives it, before the task's guardrails judge it, so
what it teaches is written at POST_STEP, which CrewAI reaches only once the guardrails accepted an
answer. An answer a guardrail sent back for a retry, and a task that fails, teach nothing.

Across threads, the kickoffs in progress of one crew or flow object are listed by `in_flight`
(concurrent `kickoff_async` runs share that object's tasks): the start checks and the
registration of a new kickoff happen under one lock, so two starts cannot both miss each other.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from crewai.hooks.dispatch import HookAborted, InterceptionPoint, register

log = logging.getLogger("mnemic.crewai")

@dataclass(frozen=True, eq=False)
class Kickoff:
    """One Crew or Flow kickoff in progress. `labels` is where a start check notes what it
    decided about this run (a memory notes the user it serves), for checks of later kickoffs."""

    owner: Any
    inputs: Mapping[str, Any]
    steps_before: tuple[Step, ...] = ()
    labels: dict[str, Any] = field(default_factory=dict)

    @property
    def is_crew(self) -> bool:
        return hasattr(self.owner, "tasks") and hasattr(self.owner, "agents")

    @property
    def name(self) -> str:
        owner = self.owner
        return str(getattr(owner, "name", None) or type(owner).__name__)

    @property
    def kickoff_id(self) -> str | None:
        # Read late: CrewAI assigns the kickoff's event id after EXECUTION_START has run.
        value = getattr(self.owner, "_kickoff_event_id", None) or getattr(self.owner, "flow_id", None)
        return str(value) if value else None


# A held write, given the answer the task's guardrails accepted (CrewAI's TaskOutput): a
# guardrail may return the answer rewritten, and that is what the task teaches.
Write = Callable[[Any], None]


@dataclass(frozen=True, eq=False)
class Step:
    """A crew task (agent + task) or a flow method being executed. `held` is what the task would
    teach, each write with the attempt at the task that produced it (`task_attempt`)."""

    agent: Any = None
    task: Any = None
    flow: Any = None
    method: str | None = None
    held: list[tuple[tuple[Any, ...], Write]] = field(default_factory=list, repr=False)

    @property
    def flow_name(self) -> str | None:
        if self.flow is None:
            return None
        return str(getattr(self.flow, "name", None) or type(self.flow).__name__)


_kickoffs: ContextVar[tuple[Kickoff, ...]] = ContextVar("mnemic_crewai_kickoffs", default=())
_steps: ContextVar[tuple[Step, ...]] = ContextVar("mnemic_crewai_steps", default=())

# Called at every kickoff start with the crew or flow, after its binding is pushed (so
# `current_kickoff()` is the new run); may raise HookAborted to refuse the kickoff (the memory
# module checks re-attachment and the user here).
StartCheck = Callable[[Any, Mapping[str, Any]], None]
_start_checks: list[StartCheck] = []
# Called when a kickoff ends (completed or failed) with the crew or flow.
EndHook = Callable[[Any], None]
_end_hooks: list[EndHook] = []
_installed = False
_install_lock = threading.Lock()

# Kickoffs in progress in any thread, by id(owner). Weak: a kickoff whose end never came (a later
# hook refused its start) goes away with the context that held it.
_in_flight: dict[int, list[weakref.ref[Kickoff]]] = {}
_in_flight_lock = threading.RLock()


def kickoffs() -> tuple[Kickoff, ...]:
    return _kickoffs.get()


def current_kickoff() -> Kickoff | None:
    stack = _kickoffs.get()
    return stack[-1] if stack else None


def current_crew_kickoff() -> Kickoff | None:
    for kick in reversed(_kickoffs.get()):
        if kick.is_crew:
            return kick
    return None


def in_flight(owner: Any) -> list[Kickoff]:
    """The kickoffs of `owner` in progress in any thread, this one's included."""
    with _in_flight_lock:
        alive = [k for k in (ref() for ref in _in_flight.get(id(owner), [])) if k is not None and k.owner is owner]
        if alive:
            _in_flight[id(owner)] = [weakref.ref(k) for k in alive]
        else:
            _in_flight.pop(id(owner), None)
        return alive


def _forget_in_flight(kick: Kickoff) -> None:
    with _in_flight_lock:
        refs = [ref for ref in _in_flight.get(id(kick.owner), []) if ref() is not None and ref() is not kick]
        if refs:
            _in_flight[id(kick.owner)] = refs
        else:
            _in_flight.pop(id(kick.owner), None)


def current_step() -> Step | None:
    stack = _steps.get()
    return stack[-1] if stack else None


def current_task_step() -> Step | None:
    for step in reversed(_steps.get()):
        if step.task is not None:
            return step
    return None


def current_flow_step() -> Step | None:
    for step in reversed(_steps.get()):
        if step.flow is not None:
            return step
    return None


def task_attempt(task: Any) -> tuple[Any, ...]:
    """Which attempt at `task` is running. CrewAI counts the retries a guardrail asked for on the
    task (`retry_count` for `guardrail=`, `_guardrail_retry_counts` per guardrail for
    `guardrails=`) and raises the count before it runs the agent again, so an answer given under
    another count than the one the task ends with is one a guardrail sent back."""
    per_guardrail = getattr(task, "_guardrail_retry_counts", None)
    counts = sorted(per_guardrail.items()) if isinstance(per_guardrail, Mapping) else []
    return getattr(task, "retry_count", 0), tuple(counts)


def hold_until_step_passes(write: Write) -> bool:
    """Keep `write` until the current task step passes its guardrails (then it runs) or ends
    otherwise (then it is dropped); False, and nothing kept, outside a task step. What an
    earlier attempt at the task held is dropped: a guardrail rejected that attempt's answer."""
    step = current_task_step()
    if step is None:
        return False
    attempt = task_attempt(step.task)
    step.held[:] = [(when, held) for when, held in step.held if when == attempt]
    step.held.append((attempt, write))
    return True


def _write_held(step: Step, output: Any) -> None:
    attempt = task_attempt(step.task)
    accepted = [write for when, write in step.held if when == attempt]
    step.held.clear()
    for write in accepted:
        try:
            write(output)
        except HookAborted:
            raise
        except Exception:
            # As CrewAI's own save after a task: a failed save does not fail the task that passed.
            log.exception("mnemic: could not save what a finished task taught")


def _inputs_for(owner: Any, given: Any) -> dict[str, Any]:
    inputs = dict(given) if isinstance(given, Mapping) else {}
    # A crew resumed from a checkpoint is kicked off again, often without inputs; the checkpoint
    # kept the original ones. Only for a resumed crew: `_inputs` of a crew that simply ran before
    # belongs to its previous kickoff and must not carry that user over.
    if getattr(owner, "checkpoint_kickoff_event_id", None) is not None:
        saved = getattr(owner, "checkpoint_inputs", None)
        if isinstance(saved, Mapping):
            inputs = {**saved, **inputs}
    return inputs


def _on_execution_start(ctx: Any) -> None:
    owner = getattr(ctx, "crew", None) or getattr(ctx, "flow", None)
    if owner is None:
        return None
    inputs = _inputs_for(owner, getattr(ctx, "inputs", None))
    stack = tuple(k for k in _kickoffs.get() if k.owner is not owner)  # drop a stale binding
    kick = Kickoff(owner=owner, inputs=inputs, steps_before=_steps.get())
    token_stack = _kickoffs.set((*stack, kick))
    with _in_flight_lock:
        _in_flight.setdefault(id(owner), []).append(weakref.ref(kick))
        try:
            for check in list(_start_checks):
                check(owner, inputs)
        except BaseException:
            # EXECUTION_END never fires for a kickoff whose start was refused.
            _forget_in_flight(kick)
            _kickoffs.reset(token_stack)
            raise
    settled = _inputs_for(owner, getattr(ctx, "inputs", None))
    if settled != inputs:  # a check made it a new kickoff: the saved inputs were the held kickoff's
        inputs.clear()  # this kickoff's own dict (from _inputs_for): the binding keeps its identity
        inputs.update(settled)
    return None


def _on_execution_end(ctx: Any) -> None:
    owner = getattr(ctx, "crew", None) or getattr(ctx, "flow", None)
    stack = _kickoffs.get()
    for index in range(len(stack) - 1, -1, -1):
        if stack[index].owner is owner:
            _forget_in_flight(stack[index])
            _steps.set(stack[index].steps_before)
            _kickoffs.set(stack[:index])
            break
    for hook in list(_end_hooks):
        hook(owner)
    return None


def _on_pre_step(ctx: Any) -> None:
    kind = getattr(ctx, "kind", None)
    if kind == "task":
        step = Step(agent=getattr(ctx, "agent", None), task=getattr(ctx, "task", None))
    elif kind == "flow_method":
        step = Step(flow=getattr(ctx, "flow", None), method=getattr(ctx, "step_name", None))
    else:
        return None
    _steps.set((*_steps.get(), step))
    return None


def _on_post_step(ctx: Any) -> None:
    kind = getattr(ctx, "kind", None)
    stack = _steps.get()
    for index in range(len(stack) - 1, -1, -1):
        step = stack[index]
        if (kind == "task" and step.task is not None and step.task is getattr(ctx, "task", None)) or (
            kind == "flow_method" and step.flow is not None and step.flow is getattr(ctx, "flow", None)
            and step.method == getattr(ctx, "step_name", None)
        ):
            try:
                # CrewAI dispatches a task's POST_STEP only after its guardrails accepted an answer;
                # written while the step is still current, so the turn is read as the task's.
                _write_held(step, getattr(ctx, "output", None))
            finally:
                _steps.set(stack[:index])
            break
    return None


@contextmanager
def bound_kickoff(owner: Any, inputs: Mapping[str, Any]) -> Iterator[Kickoff]:
    """Run a block as a kickoff of `owner` with `inputs`: for what CrewAI runs without its kickoff
    hooks (`crew.replay` dispatches no EXECUTION_START), so memory calls inside know the run."""
    kick = Kickoff(owner=owner, inputs=dict(inputs), steps_before=_steps.get())
    kickoffs_token = _kickoffs.set((*(k for k in _kickoffs.get() if k.owner is not owner), kick))
    steps_token = _steps.set(_steps.get())
    try:
        yield kick
    finally:
        # Restores the outer run even after CrewAI's EXECUTION_END (a replay that completes
        # dispatches one) popped this binding.
        _kickoffs.reset(kickoffs_token)
        _steps.reset(steps_token)


def install(start_check: StartCheck | None = None, end_hook: EndHook | None = None) -> None:
    """Register the hooks once per process (they are no-ops for runs that use no mnemic memory)."""
    global _installed
    with _install_lock:
        if start_check is not None and start_check not in _start_checks:
            _start_checks.append(start_check)
        if end_hook is not None and end_hook not in _end_hooks:
            _end_hooks.append(end_hook)
        if _installed:
            return
        register(InterceptionPoint.EXECUTION_START, _on_execution_start)
        register(InterceptionPoint.EXECUTION_END, _on_execution_end)
        register(InterceptionPoint.PRE_STEP, _on_pre_step)
        register(InterceptionPoint.POST_STEP, _on_post_step)
        _installed = True


def iter_memories(owner: Any) -> Iterator[tuple[Any, str, Any]]:
    """(holder, attribute, memory) for every memory a crew or flow uses, including its agents'."""
    if hasattr(owner, "tasks") and hasattr(owner, "agents"):
        yield owner, "memory", getattr(owner, "memory", None)
        yield owner, "_memory", getattr(owner, "_memory", None)
        agents = list(getattr(owner, "agents", None) or [])
        manager = getattr(owner, "manager_agent", None)
        if manager is not None:
            agents.append(manager)
        for task in getattr(owner, "tasks", None) or []:
            agent = getattr(task, "agent", None)
            if agent is not None and all(agent is not a for a in agents):
                agents.append(agent)
        for agent in agents:
            yield agent, "memory", getattr(agent, "memory", None)
    else:
        yield owner, "memory", getattr(owner, "memory", None)


__all__ = [
    "Kickoff",
    "Step",
    "bound_kickoff",
    "current_crew_kickoff",
    "current_flow_step",
    "current_kickoff",
    "current_step",
    "current_task_step",
    "hold_until_step_passes",
    "in_flight",
    "install",
    "iter_memories",
    "kickoffs",
    "task_attempt",
]

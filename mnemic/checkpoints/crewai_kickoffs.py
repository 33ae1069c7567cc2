"""`KickoffOutputs`: the task outputs CrewAI replays from, kept per crew and per kickoff.

CrewAI records each task's output through `crew._task_output_handler` (`reset` at kickoff,
`update` after every task, `load` when `crew.replay(task_id)` starts) into one table,
`latest_kickoff_task_outputs`, that every kickoff of every crew clears: after crew A then crew B,
A can no longer be replayed. This handler speaks the same four calls and keeps every kickoff as a
run in mnemic's run log (`core.runs`), grouped by the crew's key (stable across processes and
copies), with its user, inputs and times, the last `keep` per crew.

- `load()` returns the outputs of the kickoff a replay reads: the one pinned by mnemic's replay
  (`pin`), else this crew's latest. Each output's `task_id` is that of the crew's own task at the
  same position when the task is the same (same key), so a crew object built in another process
  can replay a kickoff stored by this one.
- A replay is stored as a new run (`meta.replay_of`), holding the source's outputs before the
  replayed task and its own after: the kickoff it replays is never changed.
- A crew restored from a checkpoint keeps its kickoff id, so its outputs continue that kickoff's run.

Recording never breaks a kickoff: a failed write is logged and handed to `on_failure` (mnemic's
integration reports it on the crew's result); the crew goes on.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import Any

from crewai.utilities.crew_json_encoder import CrewJSONEncoder

from ..core.runs import Run, RunLog, RunStep

log = logging.getLogger("mnemic.crewai")

KICKOFF_KIND = "kickoff"
DEFAULT_KEEP_KICKOFFS = 20
# What CrewAI computes for a task (a uuid and a hash), stored as it is: the run log redacts secrets
# from everything else, and "task_key: <hex>" reads like a credential.
_STEP_IDS = ("task_id", "task_key")
FailureReport = Callable[[str, BaseException], None]


def plain(value: Any) -> Any:
    """A CrewAI structure as plain JSON data (as CrewAI's own store encodes it)."""
    return json.loads(json.dumps(value, cls=CrewJSONEncoder))


def crew_group(crew: Any) -> str:
    """A crew's group in the run log: its key, a hash of its agents and tasks that is the same
    for every copy of the crew and in every process."""
    return str(crew.key)


class KickoffOutputs:
    """CrewAI's task-output handler interface over a `RunLog`, for one crew object.

    `user_of()` and `inputs_of()` say whose run and which inputs, from the run's own context:
    the crew object's `_inputs` is shared by every kickoff of it, so two concurrent ones would
    record each other's inputs."""

    def __init__(self, crew: Any, runs: RunLog, *, user_of: Callable[[], str | None],
                 inputs_of: Callable[[], Mapping[str, Any] | None] | None = None,
                 keep: int | None = DEFAULT_KEEP_KICKOFFS, on_failure: FailureReport | None = None) -> None:
        if keep is not None and (not isinstance(keep, int) or keep < 1):
            raise ValueError(f"keep is how many kickoffs to keep per crew (>= 1, or None for all), got {keep!r}")
        self._crew = weakref.ref(crew)
        self._runs = runs
        self._user_of = user_of
        self._inputs_of = inputs_of
        self._keep = keep
        self._on_failure = on_failure
        tag = f"{id(self):x}"
        # Per context, so two kickoff_async runs of one crew object each write their own run.
        self._current: ContextVar[str | None] = ContextVar(f"mnemic_kickoff_run_{tag}", default=None)
        self._source: ContextVar[Run | None] = ContextVar(f"mnemic_replay_source_{tag}", default=None)
        self._replay: ContextVar[str | None] = ContextVar(f"mnemic_replay_run_{tag}", default=None)

    @property
    def runs(self) -> RunLog:
        return self._runs

    def _live_crew(self) -> Any:
        crew = self._crew()
        if crew is None:
            raise RuntimeError("the crew this kickoff store belongs to is gone")
        return crew

    def current_run_id(self) -> str | None:
        """The run the kickoff (or replay) in progress in this context writes to."""
        return self._replay.get() or self._current.get()

    # -- what CrewAI calls -------------------------------------------------------------------------

    def reset(self) -> None:
        """A kickoff starts: its first output opens a new run (nothing is deleted)."""
        self._current.set(None)
        self._replay.set(None)
        self._source.set(None)

    def update(self, task_index: int, log_entry: dict[str, Any]) -> None:
        try:
            step = self._step(log_entry)
            if log_entry.get("was_replayed"):
                run_id = self._replay.get() or self._begin_replay(task_index)
            else:
                run_id = self._current.get() or self._begin_kickoff()
            self._runs.record_step(run_id, task_index, step, step_id=step["task_id"], verbatim=_STEP_IDS)
        except Exception as exc:  # never break the crew for its replay record
            task = log_entry.get("task")
            what = f"the output of task {task_index + 1} ({getattr(task, 'name', None) or 'unnamed'}) for replay"
            log.warning("mnemic: could not store %s: %s", what, exc)
            if self._on_failure is not None:
                self._on_failure(what, exc)

    def add(self, task: Any, output: dict[str, Any], task_index: int, inputs: dict[str, Any] | None = None,
            was_replayed: bool = False) -> None:
        self.update(task_index, {"task": task, "output": output, "task_index": task_index,
                                 "inputs": inputs or {}, "was_replayed": was_replayed})

    def load(self) -> list[dict[str, Any]]:
        """The outputs a replay starts from, in CrewAI's row format ([] when there are none)."""
        crew = self._live_crew()
        source = self._source.get() or self._runs.latest(crew_group(crew))
        self._source.set(source)
        self._replay.set(None)
        return [] if source is None else self.rows(source)

    # -- replay support ------------------------------------------------------------------------------

    def pin(self, run: Run) -> Token[Run | None]:
        """Make the next `load()` in this context read `run` (undo with `unpin`)."""
        return self._source.set(run)

    def unpin(self, token: Token[Run | None]) -> None:
        self._source.reset(token)

    def rows(self, run: Run) -> list[dict[str, Any]]:
        tasks = list(getattr(self._live_crew(), "tasks", []) or [])
        rows = []
        for step in run.steps:
            output = step.output
            task_id = output.get("task_id")
            if step.index < len(tasks) and output.get("task_key") == tasks[step.index].key:
                task_id = str(tasks[step.index].id)
            rows.append({
                "task_id": task_id, "task_key": output.get("task_key"),
                "expected_output": output.get("expected_output"), "output": output.get("output") or {},
                "task_index": step.index, "inputs": dict(run.inputs), "was_replayed": bool(output.get("was_replayed")),
                "timestamp": step.recorded_at.strftime("%Y-%m-%d %H:%M:%S"),
            })
        return rows

    # -- recording -----------------------------------------------------------------------------------

    @staticmethod
    def _step(log_entry: Mapping[str, Any]) -> dict[str, Any]:
        task = log_entry["task"]
        output = plain(log_entry.get("output") or {})
        return {
            "task_id": str(task.id), "task_key": task.key, "task_name": getattr(task, "name", None),
            "expected_output": task.expected_output, "agent": output.get("agent"), "output": output,
            "was_replayed": bool(log_entry.get("was_replayed")),
        }

    def _header(self, crew: Any) -> dict[str, Any]:
        fingerprint = getattr(getattr(crew, "fingerprint", None), "uuid_str", None)
        process = getattr(crew, "process", None)
        return {
            "group": crew_group(crew), "group_name": getattr(crew, "name", None), "kind": KICKOFF_KIND,
            "user_id": self._user_of(), "inputs": plain(dict(self._inputs(crew))),
            "meta": {"fingerprint": fingerprint, "process": str(getattr(process, "value", process) or "") or None},
        }

    def _inputs(self, crew: Any) -> Mapping[str, Any]:
        given = self._inputs_of() if self._inputs_of is not None else None
        return given if given is not None else (getattr(crew, "_inputs", None) or {})

    def _begin_kickoff(self) -> str:
        crew = self._live_crew()
        header = self._header(crew)
        kickoff_id = getattr(crew, "_kickoff_event_id", None)
        run_id: str | None = str(kickoff_id) if kickoff_id else None
        if run_id is not None:
            existing = self._runs.get(run_id)
            if existing is not None:
                if existing.group == header["group"] and existing.user_id == header["user_id"]:
                    self._current.set(existing.run_id)  # a restored crew resumes its kickoff
                    return existing.run_id
                run_id = None
        run = self._runs.begin(run_id=run_id, **header)
        self._current.set(run.run_id)
        self._prune(run.group)
        return run.run_id

    def _begin_replay(self, task_index: int) -> str:
        crew = self._live_crew()
        source = self._source.get()
        header = self._header(crew)
        kept: tuple[RunStep, ...] = tuple(s for s in source.steps if s.index < task_index) if source else ()
        header["meta"] |= {"replay_of": source.run_id if source else None, "replayed_from_task": task_index + 1}
        kickoff_id = getattr(crew, "_kickoff_event_id", None)
        run_id = str(kickoff_id) if kickoff_id and self._runs.get(str(kickoff_id)) is None else None
        run = self._runs.begin(run_id=run_id, steps=kept, verbatim=_STEP_IDS, **header)
        self._replay.set(run.run_id)
        self._prune(run.group)
        return run.run_id

    def _prune(self, group: str) -> None:
        if self._keep is not None:
            self._runs.prune(group, self._keep)


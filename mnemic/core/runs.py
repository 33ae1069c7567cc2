"""The run log: what each run of an agent team produced, step by step, kept for replay.

A run is one execution of a group of agents (a CrewAI crew's kickoff, for instance): who it was
for, its inputs, and each step's output in order. Frameworks that replay a run from a step need
the outputs of the steps before it; CrewAI keeps only the latest kickoff of any crew, in one
table every crew overwrites. Here every run is kept per group (a crew's stable key) and per run,
the last N per group, and a run never overwrites another.

Runs never hold a secret: inputs (keys and values), step outputs and the rest of a run's text are
redacted before they are written (`safety.redact_data`), counted through `on_secrets` (the
Memory's `stats`) and logged by kind only. A replay therefore sees "[redacted secret]" where a
credential was.

Runs hold what users asked and what agents answered for them, so they belong to their user:
`erase_user` removes a user's runs, and `Memory.forget(user_id=...)` calls it in every process
(the log is part of every Memory, under the label "kickoffs"). Erasing some of a user's records
cuts their texts out of that user's runs (`cut_texts`): a task's output keeps the prompt it was
given, and memory put what it recalled into that prompt. They live in the namespace's
Chroma database (`store/runs.py`), so an embedded store keeps them in its directory and a server
deployment shares them between all its processes.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .records import one_line
from .safety import SecretRefusedError, redact_data, secret_fields
from .store.chroma import StoredRow
from .store.runs import RunCollection
from .validation import check_new_user_id, check_user_id

log = logging.getLogger("mnemic.runs")

RUNS_LABEL = "kickoffs"
ERASED = "[erased]"
# A shorter text ("raw", a name) is a word of ordinary output too: cutting it everywhere would
# erase what is not the record.
MIN_CUT_CHARS = 12
# What of a run's header may hold a record's text: not its ids, group, user or kind.
_HEADER_TEXT_FIELDS = ("inputs", "meta", "group_name")
MAX_RUN_ID_CHARS = 200
_RUN_ID_OK = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:@+-]*\Z")
_IN_CHUNK = 500


def _cut(value: Any, forms: Sequence[str]) -> Any:
    """`value` (decoded JSON) with every string value's occurrences of `forms` replaced by ERASED
    (keys are the framework's structure, never a record's text, and stay as they are)."""
    if isinstance(value, str):
        for form in forms:
            value = value.replace(form, ERASED)
        return value
    if isinstance(value, list):
        return [_cut(item, forms) for item in value]
    if isinstance(value, dict):
        return {key: _cut(item, forms) for key, item in value.items()}
    return value


def _forms_of(text: str) -> set[str]:
    """How a record's text can sit in a run: as stored, on one line (as a prompt shows it), and
    escaped inside a JSON string a model wrote (a tool call's arguments), with and without \\u escapes."""
    forms = {text, one_line(text)}
    forms |= {json.dumps(form, ensure_ascii=ascii_only)[1:-1] for form in list(forms) for ascii_only in (True, False)}
    return {form for form in forms if len(form.strip()) >= MIN_CUT_CHARS}


def _when(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value or 0.0), tz=timezone.utc)


def _json(value: Any) -> str:
    # Outputs are the framework's own structures; anything JSON cannot say is kept as its text.
    return json.dumps(value, default=str, ensure_ascii=False)


def _all(*clauses: Mapping[str, Any]) -> dict[str, Any]:
    kept = [dict(c) for c in clauses if c]
    return kept[0] if len(kept) == 1 else {"$and": kept}


def check_run_id(run_id: Any) -> str:
    if not isinstance(run_id, str):
        raise TypeError(f"a run id is a string, got {type(run_id).__name__}")
    cleaned = run_id.strip()
    if not cleaned or len(cleaned) > MAX_RUN_ID_CHARS or not _RUN_ID_OK.match(cleaned):
        raise ValueError(f"not a run id: {run_id!r} (letters, digits and ._:@+- only, at most "
                         f"{MAX_RUN_ID_CHARS} characters)")
    return cleaned


def _check_group(group: Any) -> str:
    if not isinstance(group, str) or not group.strip():
        raise ValueError("a run's group (e.g. the crew's key) must be a non-empty string")
    return group.strip()


def _refuse_secret_labels(what: str, **labels: str | None) -> None:
    """A run's labels (group, kind, ids) are stored as given, unlike its inputs and outputs, which
    are redacted: the framework computes them, so one holding a secret is refused, not rewritten.
    They are ids: a random-looking word passes, every named or shaped secret does not."""
    found = secret_fields({k: v for k, v in labels.items() if v is not None}, identifiers=frozenset(labels))
    if found:
        raise SecretRefusedError(found, what=what)


@dataclass(frozen=True)
class RunStep:
    """One step's output, at its position in the run."""

    index: int
    output: dict[str, Any]
    step_id: str | None = None
    recorded_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


@dataclass(frozen=True)
class Run:
    """A run: whose it was, its inputs, when, and (from `RunLog.get`) its steps in order."""

    run_id: str
    group: str
    group_name: str | None
    user_id: str | None
    kind: str
    inputs: dict[str, Any]
    meta: dict[str, Any]
    started_at: datetime
    updated_at: datetime
    step_count: int
    steps: tuple[RunStep, ...] = ()

    def to_dict(self, *, with_steps: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run_id": self.run_id, "group": self.group, "group_name": self.group_name,
            "user_id": self.user_id, "kind": self.kind, "inputs": self.inputs, "meta": self.meta,
            "started_at": self.started_at.isoformat(), "updated_at": self.updated_at.isoformat(),
            "step_count": self.step_count,
        }
        if with_steps:
            data["steps"] = [{"index": s.index, "step_id": s.step_id, "recorded_at": s.recorded_at.isoformat(),
                              "output": s.output} for s in self.steps]
        return data


class RunLog:
    """Runs of a namespace, per group and per user. Thread-safe; safe for several processes
    writing different runs (each run is written by the process executing it)."""

    label = RUNS_LABEL

    def __init__(self, collection: RunCollection, *, on_secrets: Callable[[list[str]], None] | None = None,
                 on_erased: Callable[[RunCollection, list[str]], None] | None = None) -> None:
        self._collection = collection
        self._lock = threading.Lock()
        self._on_secrets = on_secrets
        # Called with the ids a user's erasure removed: Chroma keeps them in its write log until the
        # collection's index is saved, so the owner of the files scrubs them (see scrub.py).
        self._on_erased = on_erased

    def _without_secrets(self, data: Mapping[str, Any], what: str, verbatim: Collection[str] = ()) -> dict[str, Any]:
        """`data` with every secret redacted (but the `verbatim` keys); what was found is counted and
        logged by kind only."""
        cleaned, kinds = redact_data(data, verbatim=verbatim)
        if kinds:
            log.info("redacted %d secret(s) (%s) in %s before storing it", len(kinds),
                     ", ".join(sorted(set(kinds))), what)
            if self._on_secrets is not None:
                self._on_secrets(kinds)
        return dict(cleaned)

    def in_use(self) -> bool:
        """Whether any run was ever recorded in this namespace (erasure reports only places in use)."""
        return self._collection.exists()

    # -- writing -----------------------------------------------------------------------------------

    def begin(
        self,
        *,
        group: str,
        user_id: str | None,
        inputs: Mapping[str, Any] | None = None,
        group_name: str | None = None,
        kind: str = "kickoff",
        meta: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        steps: Sequence[RunStep] = (),
        verbatim: Collection[str] = (),
    ) -> Run:
        """Record the start of a run (with `steps` already done, e.g. those a replay reuses).
        Secrets are redacted from its inputs, meta and steps; `verbatim` is as in `record_step`."""
        group = _check_group(group)
        owner = check_new_user_id(user_id) if user_id is not None else None
        run_id = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex
        _refuse_secret_labels("this run", group=group, kind=kind, run_id=run_id, user_id=owner,
                              **{f"steps[{s.index}].step_id": s.step_id for s in steps})
        now = time.time()
        described = self._without_secrets({"group_name": group_name, "inputs": dict(inputs or {}),
                                           "meta": dict(meta or {})}, f"the inputs of run {run_id}")
        header = {"run_id": run_id, "group": group, "user_id": owner, "kind": kind, **described, "started_at": now}
        step_count = max((s.index + 1 for s in steps), default=0)
        rows = [self._header_row(header, updated_at=now, step_count=step_count)]
        rows.extend(self._step_row(run_id, owner, s.index,
                                   self._without_secrets(s.output, f"step {s.index} of run {run_id}", verbatim),
                                   s.step_id, now)
                    for s in steps)
        with self._lock:
            if self._header(run_id) is not None:
                raise ValueError(f"run {run_id} already exists")
            self._collection.upsert(rows)
        return self._run(rows[0])

    def record_step(self, run_id: str, index: int, output: Mapping[str, Any], *, step_id: str | None = None,
                    verbatim: Collection[str] = ()) -> None:
        """Store (or replace) the output of step `index` of a run begun earlier, with every secret
        redacted but in the top-level keys named in `verbatim` (ids the framework computed)."""
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise ValueError(f"a step index is an int >= 0, got {index!r}")
        run_id = check_run_id(run_id)
        _refuse_secret_labels("this step", run_id=run_id, step_id=step_id)
        output = self._without_secrets(output, f"step {index} of run {run_id}", verbatim)
        with self._lock:
            header_row = self._header(run_id)
            if header_row is None:
                raise KeyError(f"no run {run_id}: begin() it first (it may have been pruned or erased)")
            header = json.loads(header_row.document)
            now = time.time()
            step_count = max(int(header_row.metadata.get("steps", 0)), index + 1)
            self._collection.upsert([
                self._header_row(header, updated_at=now, step_count=step_count),
                self._step_row(run_id, header.get("user_id"), index, output, step_id, now),
            ])

    def _header_row(self, header: Mapping[str, Any], *, updated_at: float, step_count: int) -> StoredRow:
        metadata: dict[str, Any] = {
            "row": "run", "run_id": header["run_id"], "group": header["group"],
            "user_id": header.get("user_id") or "", "kind": header["kind"],
            "started_at": float(header["started_at"]), "updated_at": updated_at, "steps": step_count,
        }
        if header.get("group_name"):
            metadata["group_name"] = str(header["group_name"])
        return StoredRow(id=f"run:{header['run_id']}", document=_json(header), metadata=metadata)

    @staticmethod
    def _step_row(run_id: str, owner: str | None, index: int, output: Mapping[str, Any], step_id: str | None,
                  now: float) -> StoredRow:
        metadata: dict[str, Any] = {"row": "step", "run_id": run_id, "user_id": owner or "", "index": index,
                                    "at": now}
        if step_id:
            metadata["step_id"] = str(step_id)
        return StoredRow(id=f"step:{run_id}:{index:06d}", document=_json(dict(output)), metadata=metadata)

    # -- reading -----------------------------------------------------------------------------------

    def _header(self, run_id: str) -> StoredRow | None:
        rows = self._collection.get(ids=[f"run:{run_id}"])
        return rows[0] if rows else None

    @staticmethod
    def _run(row: StoredRow, steps: tuple[RunStep, ...] = ()) -> Run:
        header = json.loads(row.document)
        return Run(
            run_id=header["run_id"], group=header["group"], group_name=header.get("group_name"),
            user_id=header.get("user_id") or None, kind=header.get("kind", "run"),
            inputs=dict(header.get("inputs") or {}), meta=dict(header.get("meta") or {}),
            started_at=_when(header.get("started_at")), updated_at=_when(row.metadata.get("updated_at")),
            step_count=int(row.metadata.get("steps", 0)), steps=steps,
        )

    def get(self, run_id: str) -> Run | None:
        """A run with its steps in order, or None."""
        run_id = check_run_id(run_id)
        header = self._header(run_id)
        if header is None:
            return None
        step_rows = self._collection.get(where=_all({"row": "step"}, {"run_id": run_id}))
        steps = tuple(sorted(
            (RunStep(index=int(r.metadata["index"]), output=json.loads(r.document),
                     step_id=r.metadata.get("step_id"), recorded_at=_when(r.metadata.get("at")))
             for r in step_rows),
            key=lambda s: s.index,
        ))
        return self._run(header, steps)

    def runs(self, *, group: str | None = None, user_id: str | None = None, kind: str | None = None,
             limit: int | None = None) -> list[Run]:
        """Runs newest first (without their steps), filtered by group, user and kind."""
        where = _all({"row": "run"}, {"group": group} if group else {},
                     {"user_id": user_id} if user_id is not None else {}, {"kind": kind} if kind else {})
        rows = sorted(self._collection.get(where=where), key=lambda r: float(r.metadata.get("started_at", 0.0)),
                      reverse=True)
        return [self._run(r) for r in rows[:limit]]

    def latest(self, group: str, *, user_id: str | None = None, step_id: str | None = None) -> Run | None:
        """The newest run of `group` (for `user_id` when given; holding step `step_id` when given),
        with its steps."""
        candidates = self.runs(group=group, user_id=user_id)
        if step_id is not None:
            holding = {r.metadata["run_id"] for r in self._collection.get(
                where=_all({"row": "step"}, {"step_id": str(step_id)}), documents=False)}
            candidates = [r for r in candidates if r.run_id in holding]
        return self.get(candidates[0].run_id) if candidates else None

    def holding_step(self, step_id: str) -> list[Run]:
        """Every run (newest first, without steps) that has a step with this id."""
        run_ids = sorted({r.metadata["run_id"] for r in self._collection.get(
            where=_all({"row": "step"}, {"step_id": str(step_id)}), documents=False)})
        headers = self._collection.get(ids=[f"run:{i}" for i in run_ids])
        return sorted((self._run(r) for r in headers), key=lambda r: r.started_at, reverse=True)

    # -- removing ----------------------------------------------------------------------------------

    def _delete_runs(self, run_ids: Sequence[str]) -> None:
        for start in range(0, len(run_ids), _IN_CHUNK):
            chunk = list(run_ids[start:start + _IN_CHUNK])
            self._collection.delete(where={"run_id": chunk[0]} if len(chunk) == 1 else {"run_id": {"$in": chunk}})

    def prune(self, group: str, keep: int) -> int:
        """Keep the newest `keep` runs of `group`; returns how many were removed."""
        if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
            raise ValueError(f"keep is a number of runs >= 0, got {keep!r}")
        with self._lock:
            doomed = [r.run_id for r in self.runs(group=_check_group(group))[keep:]]
            self._delete_runs(doomed)
        return len(doomed)

    def delete(self, run_id: str) -> bool:
        run_id = check_run_id(run_id)
        with self._lock:
            if self._header(run_id) is None:
                return False
            self._delete_runs([run_id])
        return True

    def cut_texts(self, user_id: str, texts: Collection[str]) -> int:
        """Replace each of `texts` (erased records, with the texts they had before) by ERASED
        wherever the user's runs hold it (see `_forms_of`) in their inputs and outputs; returns how
        many rows were rewritten. Texts under MIN_CUT_CHARS are left alone. The rewrite goes
        through the erasure hook like a removal: the old rows' bytes are scrubbed."""
        owner = check_user_id(user_id)
        forms = sorted({form for text in texts for form in _forms_of(text)}, key=len, reverse=True)
        if not forms:
            return 0
        as_stored = [_json(form)[1:-1] for form in forms]  # how each sits inside a JSON document
        with self._lock:
            rewritten = []
            for row in self._collection.get(where={"user_id": owner}):
                if not any(form in row.document for form in as_stored):
                    continue
                data = json.loads(row.document)
                if row.metadata.get("row") == "run" and isinstance(data, dict):
                    cut = {key: _cut(value, forms) if key in _HEADER_TEXT_FIELDS else value
                           for key, value in data.items()}
                else:
                    cut = _cut(data, forms)
                document = _json(cut)
                if document != row.document:
                    rewritten.append(StoredRow(id=row.id, document=document, metadata=row.metadata))
            if rewritten:
                self._collection.upsert(rewritten)
                if self._on_erased is not None:
                    self._on_erased(self._collection, [r.id for r in rewritten])
        return len(rewritten)

    def erase_user(self, user_id: str) -> int:
        """Remove every run of `user_id` (header and steps); returns how many runs went."""
        owner = check_user_id(user_id)
        with self._lock:
            rows = self._collection.get(where={"user_id": owner}, documents=False)
            count = sum(1 for r in rows if r.metadata.get("row") == "run")
            self._collection.delete(where={"user_id": owner})
            if rows and self._on_erased is not None:
                self._on_erased(self._collection, [r.id for r in rows])
        return count

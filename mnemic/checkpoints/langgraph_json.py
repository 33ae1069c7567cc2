"""`JsonCheckpointSaver`: LangGraph checkpoints as JSON files in a directory, for one process.

    from mnemic.checkpoints import JsonCheckpointSaver

    saver = JsonCheckpointSaver("./.mnemic/threads", memory=memory)
    graph = builder.compile(checkpointer=saver)

Layout (names are digests, so any thread id or namespace is a safe file name on every filesystem;
each file says in its content which thread, namespace and checkpoint it holds):

    threads/<thread>.json                             the thread's id and user
    checkpoints/<thread>/<namespace>/<checkpoint>.json
    writes/<thread>/<namespace>/<checkpoint>/<task>.json

Every file is written atomically (temp file, fsync, `os.replace`, directory fsync: see
`mnemic.core.durable`), so a crash leaves the old file or the new one, never a torn one. Serialised
values are base64 of the saver's `serde` bytes; metadata is plain JSON where it can be. A file of
a user's thread has an owner sidecar written before it (`mark_owner`), which is how
`memory.forget(user_id=...)` finds the user's files from any process once `memory=` registered
the directory. Writers in several processes are not coordinated: give each process its own
directory, or use `SqliteCheckpointSaver`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.durable import fsync_directory, remove_durably, write_atomic
from ..core.retention import OWNER_SUFFIX, RetainedPlace, mark_owner, owner_of
from ..core.store import owner_key
from .langgraph_rows import (
    METADATA_AS_JSON,
    CheckpointRow,
    CorruptCheckpointError,
    Ref,
    Typed,
    WriteRow,
    corrupt,
    owner_after_write,
)
from .langgraph_saver import (
    CHECKPOINTS_LABEL,
    THREADS_LABEL,
    WRITES_LABEL,
    LangGraphSaver,
)
from .owners import retain_once

if TYPE_CHECKING:
    from langgraph.checkpoint.base import SerializerProtocol

    from ..core.memory import Memory

_PLAIN_ID = re.compile(r"[0-9a-f][0-9a-f-]{7,63}")  # LangGraph's uuid6 ids keep their own name


def _digest(prefix: str, value: str, length: int = 40) -> str:
    return prefix + hashlib.sha256(value.encode("utf-8")).hexdigest()[:length]


def _checkpoint_name(checkpoint_id: str) -> str:
    # Plain ids are their own names, so a namespace lists in order without opening any file;
    # 'h' is not a hex digit, so a digest name never looks like a plain id.
    return checkpoint_id if _PLAIN_ID.fullmatch(checkpoint_id) else _digest("h", checkpoint_id)


def _typed_out(typed: Typed) -> dict[str, Any]:
    kind, data = typed
    if kind == METADATA_AS_JSON:
        return {"json": json.loads(data.decode("utf-8"))}
    return {"type": kind, "base64": base64.b64encode(data).decode("ascii")}


def _typed_in(value: dict[str, Any]) -> Typed:
    if "json" in value:
        return METADATA_AS_JSON, json.dumps(value["json"], ensure_ascii=False).encode("utf-8")
    return str(value["type"]), base64.b64decode(value["base64"])


def _dump(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _read(path: Path, what: str = "the file") -> dict[str, Any] | None:
    """The JSON object in `path` (None when there is no file); CorruptCheckpointError when the file
    is not one (the message names the file and, where it can, the thread)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise corrupt(what, f"file {path}", exc) from exc
    if not isinstance(value, dict):
        raise corrupt(what, f"file {path}", f"it holds a JSON {type(value).__name__}, not an object")
    return value


def _remove_tree(directory: Path) -> None:
    if directory.is_dir():
        shutil.rmtree(directory)
        fsync_directory(directory.parent)


def _remove_owned(path: Path) -> None:
    remove_durably(path)
    remove_durably(Path(str(path) + OWNER_SUFFIX))


class JsonCheckpointSaver(LangGraphSaver):
    """A LangGraph checkpointer on a directory of JSON files (see the module docstring); sync and async.

    `memory=` registers the directory with that Memory's namespace, so `memory.forget(user_id=...)`
    deletes the user's threads (reported as "threads", "thread_checkpoints" and "thread_writes").
    """

    def __init__(self, directory: str | Path, *, memory: Memory | None = None,
                 serde: SerializerProtocol | None = None, user_key: str = "user_id") -> None:
        super().__init__(serde=serde, user_key=user_key)
        self.directory = Path(directory).expanduser().resolve()
        self.threads_dir = self.directory / "threads"
        self.checkpoints_dir = self.directory / "checkpoints"
        self.writes_dir = self.directory / "writes"
        for folder in (self.threads_dir, self.checkpoints_dir, self.writes_dir):
            folder.mkdir(parents=True, exist_ok=True)
        for place in self.retained_places() if memory is not None else ():
            retain_once(memory, place)

    def __repr__(self) -> str:
        return f"JsonCheckpointSaver({str(self.directory)!r})"

    def retained_places(self) -> list[RetainedPlace]:
        """Where this saver keeps users' data, as `Memory.retain` takes it."""
        return [RetainedPlace(label=THREADS_LABEL, kind="files", path=str(self.threads_dir)),
                RetainedPlace(label=CHECKPOINTS_LABEL, kind="files", path=str(self.checkpoints_dir)),
                RetainedPlace(label=WRITES_LABEL, kind="files", path=str(self.writes_dir))]

    # -- paths --------------------------------------------------------------------------------------

    def _manifest(self, thread_id: str) -> Path:
        return self.threads_dir / (_digest("t", thread_id) + ".json")

    def _thread_dir(self, thread_id: str) -> Path:
        return self.checkpoints_dir / _digest("t", thread_id)

    def _checkpoint_file(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Path:
        return (self._thread_dir(thread_id) / _digest("n", checkpoint_ns, 32)
                / (_checkpoint_name(checkpoint_id) + ".json"))

    def _writes_dir(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Path:
        return (self.writes_dir / _digest("t", thread_id) / _digest("n", checkpoint_ns, 32)
                / _checkpoint_name(checkpoint_id))

    def _write(self, path: Path, document: dict[str, Any], owner: str | None) -> None:
        if owner is not None:
            mark_owner(path, owner)  # before the file, so no file of a user's thread is ever unowned
        write_atomic(path, _dump(document))

    # -- ownership ----------------------------------------------------------------------------------

    def _claim(self, thread_id: str, user: str | None) -> str | None:
        manifest = self._manifest(thread_id)
        recorded = self._read_for(thread_id, manifest, "the thread's record")
        recorded_user = recorded.get("user_id") if recorded else None
        owner = owner_after_write(thread_id, recorded_user, recorded is not None, user)
        if recorded is not None and recorded_user == owner:
            return owner
        if recorded is not None:
            self._mark_thread(thread_id, owner)  # a thread written without a user is claimed
        self._write(manifest, {"thread_id": thread_id, "user_id": owner}, owner)
        return owner

    def _mark_thread(self, thread_id: str, owner: str | None) -> None:
        if owner is not None:
            for path in sorted((self.writes_dir / _digest("t", thread_id)).rglob("*.json")):
                mark_owner(path, owner)
        for path in sorted(self._thread_dir(thread_id).rglob("*.json")):
            if (document := self._read_for(thread_id, path, "the checkpoint")) is not None:
                document["user_id"] = owner
                self._write(path, document, owner)

    def _thread_owner(self, thread_id: str) -> str | None:
        return owner_of(self._manifest(thread_id))  # the sidecar, not the (maybe damaged) manifest

    def _read_for(self, thread_id: str | None, path: Path, what: str,
                  checkpoint_id: str | None = None) -> dict[str, Any] | None:
        try:
            return _read(path, what)
        except CorruptCheckpointError as exc:
            if thread_id is None:
                thread_id = self._thread_id_of(path)
            if thread_id is None:
                raise
            cause = exc.__cause__
            raise corrupt(what, f"file {path}", cause if cause is not None else "not a JSON object",
                          thread_id=thread_id, checkpoint_id=checkpoint_id) from exc

    def _thread_id_of(self, path: Path) -> str | None:
        """The thread id a file under checkpoints/ or writes/ belongs to, from its thread's record
        (None when that cannot be read)."""
        for root in (self.checkpoints_dir, self.writes_dir):
            if path.is_relative_to(root):
                try:
                    recorded = _read(self.threads_dir / (path.relative_to(root).parts[0] + ".json"))
                except CorruptCheckpointError:
                    return None
                value = recorded.get("thread_id") if recorded else None
                return value if isinstance(value, str) else None
        return None

    def _where(self, row: CheckpointRow) -> str:
        return f"file {self._checkpoint_file(row.thread_id, row.checkpoint_ns, row.checkpoint_id)}"

    # -- storage primitives -------------------------------------------------------------------------

    def _thread_dirs(self, thread_id: str | None, owner: str | None) -> Iterator[Path]:
        if thread_id is not None:
            yield self._thread_dir(thread_id)
        elif self.checkpoints_dir.is_dir():
            wanted = owner_key(owner) if owner is not None else None
            for path in self.checkpoints_dir.iterdir():
                # A listing for one user opens only that user's threads: the owner comes from the
                # thread record's sidecar, so another user's files are not read (nor fail the listing).
                if path.is_dir() and (wanted is None or owner_of(self.threads_dir / (path.name + ".json")) == wanted):
                    yield path

    def _refs(self, thread_id: str | None, checkpoint_ns: str | None, *, owner: str | None = None) -> list[Ref]:
        refs: list[Ref] = []
        for thread_dir in self._thread_dirs(thread_id, owner):
            if checkpoint_ns is not None:
                ns_dirs = [thread_dir / _digest("n", checkpoint_ns, 32)]
            else:
                ns_dirs = [p for p in thread_dir.iterdir() if p.is_dir()] if thread_dir.is_dir() else []
            for ns_dir in ns_dirs:
                if not ns_dir.is_dir():
                    continue
                for body in ns_dir.glob("[!.]*.json"):  # not temp files (".name.tmp") nor sidecars
                    if _PLAIN_ID.fullmatch(body.stem):
                        refs.append(Ref(body.stem, body))
                    elif (document := self._read_for(thread_id, body, "the checkpoint")) is not None:
                        if not isinstance(document.get("checkpoint_id"), str):
                            raise corrupt("the checkpoint", f"file {body}", "it names no checkpoint_id",
                                          thread_id=thread_id or self._thread_id_of(body))
                        refs.append(Ref(document["checkpoint_id"], body))
        return refs

    def _row(self, ref: Ref) -> CheckpointRow | None:
        path: Path = ref.locator
        document = self._read_for(None, path, "the checkpoint", ref.checkpoint_id)
        if document is None:
            return None
        try:
            return CheckpointRow(
                thread_id=str(document["thread_id"]), checkpoint_ns=str(document["checkpoint_ns"]),
                checkpoint_id=str(document["checkpoint_id"]),
                parent_checkpoint_id=document.get("parent_checkpoint_id"),
                user_id=document.get("user_id"), run_id=document.get("run_id"),
                checkpoint=_typed_in(document["checkpoint"]), metadata=_typed_in(document["metadata"]))
        except (KeyError, TypeError, ValueError) as exc:  # a field missing or of the wrong kind
            raise corrupt("the checkpoint", f"file {path}", exc, thread_id=self._thread_id_of(path),
                          checkpoint_id=ref.checkpoint_id) from exc

    def _writes(self, row: CheckpointRow) -> list[WriteRow]:
        directory = self._writes_dir(row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        found: list[WriteRow] = []
        if not directory.is_dir():
            return found
        for path in directory.glob("[!.]*.json"):
            document = self._read_for(row.thread_id, path, "the pending writes", row.checkpoint_id)
            if document is None:
                continue
            try:
                found.extend(self._write_rows(document))
            except (KeyError, TypeError, ValueError) as exc:
                raise corrupt("the pending writes", f"file {path}", exc, thread_id=row.thread_id,
                              checkpoint_ns=row.checkpoint_ns, checkpoint_id=row.checkpoint_id) from exc
        return found

    @staticmethod
    def _write_rows(document: dict[str, Any]) -> list[WriteRow]:
        return [WriteRow(task_id=document["task_id"], task_path=document.get("task_path", ""), idx=int(w["idx"]),
                         channel=w["channel"], value=_typed_in(w["value"])) for w in document["writes"]]

    def _checkpoint_document(self, row: CheckpointRow, owner: str | None) -> dict[str, Any]:
        return {"thread_id": row.thread_id, "checkpoint_ns": row.checkpoint_ns, "checkpoint_id": row.checkpoint_id,
                "parent_checkpoint_id": row.parent_checkpoint_id, "user_id": owner, "run_id": row.run_id,
                "checkpoint": _typed_out(row.checkpoint), "metadata": _typed_out(row.metadata)}

    def _save(self, row: CheckpointRow) -> None:
        owner = self._claim(row.thread_id, row.user_id)
        key = (row.thread_id, row.checkpoint_ns, row.checkpoint_id)
        self._write(self._checkpoint_file(*key), self._checkpoint_document(row, owner), owner)

    def _writes_file(self, key: tuple[str, str, str], task_id: str) -> Path:
        return self._writes_dir(*key) / (_digest("w", task_id, 32) + ".json")

    def _save_writes(self, row_key: tuple[str, str, str], user: str | None, writes: list[WriteRow],
                     replace_existing: bool) -> None:
        owner = self._claim(row_key[0], user)
        for task_id in dict.fromkeys(w.task_id for w in writes):
            path = self._writes_file(row_key, task_id)
            existing = self._read_for(row_key[0], path, "the pending writes", row_key[2])
            merged = {w.idx: w for w in (self._write_rows(existing) if existing else [])}
            for write in (w for w in writes if w.task_id == task_id):
                if replace_existing or write.idx not in merged:
                    merged[write.idx] = write
            self._write_task(path, list(merged.values()), owner)

    def _write_task(self, path: Path, writes: Sequence[WriteRow], owner: str | None) -> None:
        first = writes[0]
        self._write(path, {"task_id": first.task_id, "task_path": first.task_path,
                           "writes": [{"idx": w.idx, "channel": w.channel, "value": _typed_out(w.value)}
                                      for w in sorted(writes, key=lambda w: w.idx)]}, owner)

    def _remove_thread(self, thread_id: str) -> None:
        _remove_tree(self._thread_dir(thread_id))
        _remove_tree(self.writes_dir / _digest("t", thread_id))
        _remove_owned(self._manifest(thread_id))

    def _remove(self, refs: Sequence[Ref]) -> None:
        for ref in refs:
            # checkpoints/<thread>/<ns>/<name>.json keeps its writes in writes/<thread>/<ns>/<name>/:
            # found from the path, so a damaged checkpoint file can still be removed.
            relative = Path(ref.locator).relative_to(self.checkpoints_dir)
            _remove_owned(ref.locator)
            _remove_tree(self.writes_dir / relative.parent / relative.stem)

    def _insert_thread(self, rows: Sequence[tuple[CheckpointRow, list[WriteRow]]], owner: str | None) -> None:
        self._claim(rows[0][0].thread_id, owner)
        for row, writes in rows:
            key = (row.thread_id, row.checkpoint_ns, row.checkpoint_id)
            by_task: dict[str, list[WriteRow]] = {}
            for write in writes:
                by_task.setdefault(write.task_id, []).append(write)
            for task_id, task_writes in by_task.items():
                self._write_task(self._writes_file(key, task_id), task_writes, owner)
            self._write(self._checkpoint_file(*key), self._checkpoint_document(row, owner), owner)


__all__ = ["JsonCheckpointSaver"]

"""The stored forms of LangGraph checkpoints and the savers' errors, shared by the saver and its two
storages (`langgraph_json.py`, `langgraph_sqlite.py`): a checkpoint row, a pending write, where a
checkpoint sits, how metadata is kept, and who owns a thread after a write."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from langgraph.checkpoint.base import CheckpointMetadata, SerializerProtocol

METADATA_AS_JSON = "json"

Typed = tuple[str, bytes]


class ThreadOwnerError(PermissionError):
    """A run named a user other than the one the thread belongs to, or named its user in a way that
    cannot be used (empty, blank, a look-alike or reserved id, two different users). Nothing was
    read or written."""


class CorruptCheckpointError(ValueError):
    """A stored checkpoint (or its writes, or its thread's record) cannot be read back. The message
    names the thread, checkpoint and file or table; `memory.forget(user_id=...)` still erases it."""


def corrupt(what: str, where: str, exc: BaseException | str, *, thread_id: str | None = None,
            checkpoint_ns: str | None = None, checkpoint_id: str | None = None) -> CorruptCheckpointError:
    """The error for a damaged record: which thread and checkpoint, where, and what to do."""
    named = [f"{name} {value!r}" for name, value in (("thread", thread_id), ("namespace", checkpoint_ns),
                                                       ("checkpoint", checkpoint_id)) if value is not None]
    cause = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    if thread_id is not None:
        remedy = f"restore it from a backup, or delete the thread (saver.delete_thread({thread_id!r}))"
    else:
        remedy = "restore it from a backup, or delete it"
    return CorruptCheckpointError(
        f"{what}{' of ' + ', '.join(named) if named else ''} in {where} is corrupt and cannot be read "
        f"({cause[:200]}); {remedy}. memory.forget(user_id=...) erases it with the user's other threads.")


@dataclass(frozen=True)
class CheckpointRow:
    """One stored checkpoint: where it sits, whose it is, and its serialised body and metadata."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    user_id: str | None
    run_id: str | None
    checkpoint: Typed
    metadata: Typed


@dataclass(frozen=True)
class WriteRow:
    """One pending write of a task against a checkpoint."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Typed


class Ref(NamedTuple):
    """Where a checkpoint is, as the storage found it; `locator` is the storage's own."""

    checkpoint_id: str
    locator: Any


def dump_metadata(serde: SerializerProtocol, metadata: Mapping[str, Any]) -> Typed:
    """Metadata as JSON when it is plain JSON (readable, like LangGraph's SqliteSaver), otherwise
    through the serializer, so a metadata value JSON cannot hold is kept rather than refused."""
    try:
        return METADATA_AS_JSON, json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError):
        return serde.dumps_typed(dict(metadata))


def load_metadata(serde: SerializerProtocol, typed: Typed) -> CheckpointMetadata:
    """Metadata as `dump_metadata` stored it (raises whatever the decoder raises on damaged bytes)."""
    kind, data = typed
    value = json.loads(data.decode("utf-8")) if kind == METADATA_AS_JSON else serde.loads_typed((kind, data))
    return value if isinstance(value, dict) else {}  # type: ignore[return-value]


def owner_after_write(thread_id: str, recorded: str | None, exists: bool, user: str | None) -> str | None:
    """The owner a thread has after a write by `user` (None: no user), or ThreadOwnerError."""
    if not exists or recorded is None:
        return user
    if user is not None and user != recorded:
        raise ThreadOwnerError(foreign_thread(thread_id))
    return recorded


def foreign_thread(thread_id: str) -> str:
    """What ThreadOwnerError says when a run reaches another user's thread."""
    return (f"thread {thread_id!r} belongs to another user; a run may read and write only its own "
            "user's threads (start a new thread_id for this user)")



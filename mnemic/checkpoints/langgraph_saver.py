"""What mnemic's LangGraph checkpoint savers share: the `BaseCheckpointSaver` interface over a
small storage interface, thread ownership, and the rules for pruning, copying and run deletion.

`JsonCheckpointSaver` (`langgraph_json.py`) and `SqliteCheckpointSaver` (`langgraph_sqlite.py`)
store the same rows, a checkpoint (serialised by the saver's `serde`, stored whole as
LangGraph's own SqliteSaver does) and its pending writes, and implement only the storage
primitives at the bottom of `LangGraphSaver`. Everything a graph sees is decided here, once.

Threads carry their user. The user is read from the run's config exactly as mnemic's tools and
hooks read it (`config["configurable"]["user_id"]` or a runtime context's `user_id`), and checked
as `Memory` checks a user id: an empty or blank one, one with an invisible character (a look-alike
of another user's id) or one under a prefix mnemic reserves is refused with `ThreadOwnerError`,
never read as "no user". The first write of a run that names a user makes that user the thread's
owner; a later run that names a different user gets `ThreadOwnerError` on every read and write of
that thread, so one user's conversation state never reaches another user through a guessed or
reused thread id. Ownership is decided from the storage's owner record before a checkpoint is
parsed, so another user's files are never read for a run. Calls that name no user at all (no
`user_id` key, or None: operator tooling, `graph.get_state` by thread id, LangGraph's conformance
suite) are not restricted, and a thread first written without a user is claimed by the first run
that names one. With `memory=` given, `memory.forget(user_id=...)` erases a user's threads too.

A checkpoint that cannot be read back (a damaged file or row) raises `CorruptCheckpointError`
naming its thread, checkpoint and file or table; `forget(user_id=...)` still erases it.

Async methods run the sync ones on a worker thread (`asyncio.to_thread`): file and SQLite calls
block, and fsync can take milliseconds.
"""

from __future__ import annotations

import asyncio
import copy
import random
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        SerializerProtocol,
        get_checkpoint_id,
        get_checkpoint_metadata,
        writes_sort_key,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "mnemic's LangGraph checkpoint savers need LangGraph: pip install 'mnemic[langgraph]'"
    ) from exc

from ..core.store import owner_key
from ..core.validation import check_items, check_user_id
from ..tools.langchain import USER_KEY, given_user_ids
from .langgraph_rows import (
    CheckpointRow,
    CorruptCheckpointError,
    Ref,
    ThreadOwnerError,
    WriteRow,
    corrupt,
    dump_metadata,
    foreign_thread,
    load_metadata,
)

THREADS_LABEL = "threads"
CHECKPOINTS_LABEL = "thread_checkpoints"
WRITES_LABEL = "thread_writes"
PRUNE_STRATEGIES = ("keep_latest", "delete")
class LangGraphSaver(BaseCheckpointSaver[str]):
    """`BaseCheckpointSaver` over the storage primitives a subclass provides (see the module doc).

    Thread-safe (one lock per saver, shared by `copy.copy` clones such as LangGraph's
    `with_allowlist`), and every mutation is atomic in the storage.
    """

    def __init__(self, *, serde: SerializerProtocol | None = None, user_key: str = USER_KEY) -> None:
        super().__init__(serde=serde)
        self.user_key = user_key
        self._lock = threading.RLock()

    def __deepcopy__(self, memo: dict[int, Any]) -> LangGraphSaver:
        # A saver is a handle on its storage: a deep copy is another handle on the same storage.
        return copy.copy(self)

    # -- storage primitives (subclasses) -----------------------------------------------------------

    def _refs(self, thread_id: str | None, checkpoint_ns: str | None, *, owner: str | None = None) -> list[Ref]:
        """Checkpoints of a thread (every thread when None), of one namespace (every one when None);
        with `owner` (a user id), only that user's threads, chosen without reading the others'."""
        raise NotImplementedError

    def _thread_owner(self, thread_id: str) -> str | None:
        """The `owner_key` of the thread's recorded owner (None: none recorded), read from the
        storage's owner record rather than from a checkpoint."""
        raise NotImplementedError

    def _where(self, row: CheckpointRow) -> str:
        """Where the storage keeps this checkpoint, for error messages (a file, a table)."""
        raise NotImplementedError

    def _row(self, ref: Ref) -> CheckpointRow | None:
        raise NotImplementedError

    def _writes(self, row: CheckpointRow) -> list[WriteRow]:
        raise NotImplementedError

    def _save(self, row: CheckpointRow) -> None:
        """Store `row`, checking and recording its thread's owner in the same atomic step
        (`owner_after_write`); a claim marks the thread's earlier checkpoints with the owner."""
        raise NotImplementedError

    def _save_writes(self, row_key: tuple[str, str, str], user: str | None, writes: list[WriteRow],
                     replace_existing: bool) -> None:
        """Add `writes` to a checkpoint (keeping those already there unless `replace_existing`)."""
        raise NotImplementedError

    def _remove_thread(self, thread_id: str) -> None:
        raise NotImplementedError

    def _remove(self, refs: Sequence[Ref]) -> None:
        """Remove these checkpoints and their writes, in one atomic step where the storage can."""
        raise NotImplementedError

    def _insert_thread(self, rows: Sequence[tuple[CheckpointRow, list[WriteRow]]], owner: str | None) -> None:
        """Store a whole thread copied from another (`copy_thread`)."""
        raise NotImplementedError

    def _run_refs(self, run_ids: set[str]) -> list[Ref]:
        """Checkpoints written by these runs, in every thread."""
        return [ref for ref in self._refs(None, None) if (row := self._row(ref)) is not None and row.run_id in run_ids]

    # -- identity -----------------------------------------------------------------------------------

    def user_of(self, config: RunnableConfig | None) -> str | None:
        """The user a run names, from its config and its runtime context; None when it names none
        (no `user_id`, or None). A `user_id` that is given but cannot be a user (empty, blank, an
        invisible character, a reserved prefix, not a string) raises `ThreadOwnerError`: read as "no
        user", it would have opened every thread to the run."""
        named = {self._checked_user(where, value)
                 for where, value in given_user_ids(config, user_key=self.user_key) if value is not None}
        if len(named) > 1:
            raise ThreadOwnerError(
                f"this run names two different users ({self.user_key!r} in its config and in its runtime "
                "context), so it is not clear whose threads it may use; name one user in one place")
        return next(iter(named), None)

    def _checked_user(self, where: str, value: Any) -> str:
        key = self.user_key
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ThreadOwnerError(f"{where} must be a string naming the run's user, "
                                   f"got {type(value).__name__}")
        try:
            return check_user_id(str(value))
        except ValueError as exc:
            if not str(value).strip():
                raise ThreadOwnerError(
                    f"{where} is {value!r}, an empty user id: pass the user's id (e.g. "
                    f"{{{key!r}: 'alice'}}), or leave {key!r} out for operator access to every thread; "
                    "an empty id is never read as no user") from exc
            raise ThreadOwnerError(f"{where} cannot name a user: {exc}") from exc

    def _reader(self, config: RunnableConfig | None) -> str | None:
        return self.user_of(config)

    def _check_read(self, row: CheckpointRow, user: str | None) -> None:
        if user is not None and row.user_id is not None and row.user_id != user:
            raise ThreadOwnerError(foreign_thread(row.thread_id))

    def _check_thread(self, thread_id: str, user: str | None) -> None:
        """Refuse a run another user's thread from the storage's owner record, before any of the
        thread's checkpoints is read (so a damaged file of theirs cannot fail this run either)."""
        if user is None:
            return
        recorded = self._thread_owner(thread_id)
        if recorded is not None and recorded != owner_key(user):
            raise ThreadOwnerError(foreign_thread(thread_id))

    # -- reading ------------------------------------------------------------------------------------

    def _tuple(self, row: CheckpointRow) -> CheckpointTuple:
        def config_for(checkpoint_id: str) -> RunnableConfig:
            return {"configurable": {"thread_id": row.thread_id, "checkpoint_ns": row.checkpoint_ns,
                                     "checkpoint_id": checkpoint_id}}

        writes = sorted(self._writes(row), key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        return CheckpointTuple(
            config=config_for(row.checkpoint_id),
            checkpoint=self._loaded(row),
            metadata=self._metadata(row),
            parent_config=config_for(row.parent_checkpoint_id) if row.parent_checkpoint_id else None,
            pending_writes=[(w.task_id, w.channel, self._decoded(row, w)) for w in writes],
        )

    def _corrupt(self, row: CheckpointRow, what: str, exc: BaseException | str) -> CorruptCheckpointError:
        return corrupt(what, self._where(row), exc, thread_id=row.thread_id, checkpoint_ns=row.checkpoint_ns,
                       checkpoint_id=row.checkpoint_id)

    def _loaded(self, row: CheckpointRow) -> Checkpoint:
        try:
            value = self.serde.loads_typed(row.checkpoint)
        except Exception as exc:  # a decoder fails in its own way on damaged bytes
            raise self._corrupt(row, "the checkpoint", exc) from exc
        if not isinstance(value, Mapping):
            raise self._corrupt(row, "the checkpoint", f"it holds a {type(value).__name__}, not a checkpoint")
        return value  # type: ignore[return-value]

    def _metadata(self, row: CheckpointRow) -> CheckpointMetadata:
        try:
            return load_metadata(self.serde, row.metadata)
        except Exception as exc:
            raise self._corrupt(row, "the metadata", exc) from exc

    def _decoded(self, row: CheckpointRow, write: WriteRow) -> Any:
        try:
            return self.serde.loads_typed(write.value)
        except Exception as exc:
            raise self._corrupt(row, f"pending write {write.channel!r} of task {write.task_id!r}", exc) from exc

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint `config` names, or its thread and namespace's latest; None when absent."""
        configurable = config["configurable"]
        user = self._reader(config)
        thread_id = str(configurable["thread_id"])
        wanted = get_checkpoint_id(config)
        with self._lock:
            self._check_thread(thread_id, user)
            refs = self._refs(thread_id, configurable.get("checkpoint_ns", ""))
            if wanted:
                refs = [ref for ref in refs if ref.checkpoint_id == wanted]
            if not refs:
                return None
            row = self._row(max(refs, key=lambda ref: ref.checkpoint_id))
            if row is None:
                return None
            self._check_read(row, user)
            return self._tuple(row)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first (by checkpoint id), of the config's thread and namespace (every
        thread when `config` is None), whose metadata holds every `filter` item."""
        configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
        user = self._reader(config) if config is not None else None
        thread_id = str(configurable["thread_id"]) if configurable.get("thread_id") is not None else None
        wanted = get_checkpoint_id(config) if config is not None else None
        ceiling = get_checkpoint_id(before) if before is not None else None
        with self._lock:
            if thread_id is not None:
                self._check_thread(thread_id, user)
            # Listing across threads for a user: only that user's threads, chosen before any is read.
            refs = self._refs(thread_id, configurable.get("checkpoint_ns"),
                              owner=user if thread_id is None else None)
        refs = [ref for ref in refs
                if (not wanted or ref.checkpoint_id == wanted) and (not ceiling or ref.checkpoint_id < ceiling)]
        refs.sort(key=lambda ref: ref.checkpoint_id, reverse=True)
        remaining = limit if limit is not None else -1
        for ref in refs:
            if remaining == 0:
                return
            with self._lock:
                row = self._row(ref)
                if row is None:
                    continue
                if thread_id is None and user is not None and row.user_id != user:
                    continue  # listing across threads for a user shows only that user's threads
                self._check_read(row, user)
                if filter:
                    metadata = self._metadata(row)
                    if not all(metadata.get(key) == value for key, value in filter.items()):
                        continue
                found = self._tuple(row)
            remaining -= 1
            yield found

    # -- writing ------------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (whole, so `new_versions` needs no separate blobs) and return its config."""
        configurable = config["configurable"]
        user = self._reader(config)
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = str(configurable.get("checkpoint_ns") or "")
        full_metadata = get_checkpoint_metadata(config, metadata)
        full_metadata.pop("writes", None)  # type: ignore[typeddict-item]  # LangGraph drops it from storage too
        run_id = full_metadata.get("run_id")
        row = CheckpointRow(
            thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=str(checkpoint["id"]),
            parent_checkpoint_id=configurable.get("checkpoint_id"), user_id=user,
            run_id=str(run_id) if run_id is not None else None,
            checkpoint=self.serde.dumps_typed(checkpoint), metadata=dump_metadata(self.serde, full_metadata),
        )
        with self._lock:
            self._save(row)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": row.checkpoint_id}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes against a checkpoint. Writing the same (task, index) again keeps
        the first, except for the special channels (error, interrupt, ...), which are replaced."""
        configurable = config["configurable"]
        user = self._reader(config)
        key = (str(configurable["thread_id"]), str(configurable.get("checkpoint_ns") or ""),
               str(configurable["checkpoint_id"]))
        rows = [WriteRow(task_id=task_id, task_path=task_path, idx=WRITES_IDX_MAP.get(channel, idx),
                         channel=channel, value=self.serde.dumps_typed(value))
                for idx, (channel, value) in enumerate(writes)]
        replace_existing = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        with self._lock:
            self._save_writes(key, user, rows, replace_existing)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread, in all namespaces (nothing if absent)."""
        with self._lock:
            self._remove_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that these runs wrote, in every thread.

        Like LangGraph's own warning says: a thread that goes on after one of its runs is deleted
        may lose the history a `DeltaChannel` rebuilds its value from.
        """
        # One id alone is that run: read letter by letter it deleted the runs "r", "u", "n"...
        wanted = {str(run_id) for run_id in check_items(run_ids, name="run_ids", what="a run id or a list of them",
                                                         example="delete_for_runs([run_id])")}
        if not wanted:
            return
        with self._lock:
            doomed = self._run_refs(wanted)
            if doomed:
                self._remove(doomed)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to a new thread, owner included (the whole
        parent chain, so `DeltaChannel` state can be rebuilt). Refuses a target that already has
        checkpoints (merging two histories would interleave them); a source that does not exist
        copies nothing."""
        source, target = str(source_thread_id), str(target_thread_id)
        if source == target:
            raise ValueError("copy_thread needs two different thread ids")
        with self._lock:
            if self._refs(target, None):
                raise ValueError(f"thread {target!r} already has checkpoints; delete it first or copy to a new id")
            copied: list[tuple[CheckpointRow, list[WriteRow]]] = []
            for ref in self._refs(source, None):
                row = self._row(ref)
                if row is not None:
                    copied.append((replace(row, thread_id=target), self._writes(row)))
            if copied:
                owners = {row.user_id for row, _ in copied} - {None}
                self._insert_thread(copied, next(iter(owners)) if len(owners) == 1 else None)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest`: keep each namespace's latest checkpoint with its writes, plus the ancestors a
        `DeltaChannel` still needs to rebuild its value (back to a stored value of every delta
        channel); delete the rest. `delete`: delete the threads."""
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"unknown prune strategy {strategy!r}; use one of {', '.join(PRUNE_STRATEGIES)}")
        threads = check_items(thread_ids, name="thread_ids", what="a thread id or a list of them",
                              example="prune([thread_id])")
        for thread_id in (str(t) for t in threads):
            with self._lock:
                if strategy == "delete":
                    self._remove_thread(thread_id)
                    continue
                found = [(ref, row) for ref in self._refs(thread_id, None) if (row := self._row(ref)) is not None]
                keep = self._kept_by_pruning([row for _, row in found])
                doomed = [ref for ref, row in found if (row.checkpoint_ns, row.checkpoint_id) not in keep]
                if doomed:
                    self._remove(doomed)

    def _kept_by_pruning(self, rows: Iterable[CheckpointRow]) -> set[tuple[str, str]]:
        by_ns: dict[str, dict[str, CheckpointRow]] = {}
        for row in rows:
            by_ns.setdefault(row.checkpoint_ns, {})[row.checkpoint_id] = row
        keep: set[tuple[str, str]] = set()
        for ns, chain in by_ns.items():
            latest = chain[max(chain)]
            keep.add((ns, latest.checkpoint_id))
            # A DeltaChannel stores its value only every few steps; the steps between are rebuilt
            # from ancestors' writes, so those ancestors stay until every delta channel has a value.
            counters = self._metadata(latest).get("counters_since_delta_snapshot") or {}
            needed = (set(counters) if isinstance(counters, Mapping) else set()) - self._stored_channels(latest)
            cursor = chain.get(latest.parent_checkpoint_id or "")
            while needed and cursor is not None and (ns, cursor.checkpoint_id) not in keep:
                keep.add((ns, cursor.checkpoint_id))
                needed -= self._stored_channels(cursor)
                cursor = chain.get(cursor.parent_checkpoint_id or "")
        return keep

    def _stored_channels(self, row: CheckpointRow) -> set[str]:
        """Channels whose value (or DeltaChannel snapshot) this checkpoint stores: a rebuild seeds from it."""
        return set(self._loaded(row).get("channel_values") or {})

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        """String versions `NNN…N.random`, as LangGraph's SqliteSaver and Postgres savers make them."""
        if current is None:
            number = 0
        elif isinstance(current, (int, float)):
            number = int(current)
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- async twins: the same calls on a worker thread ---------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))


__all__ = [
    "CHECKPOINTS_LABEL",
    "THREADS_LABEL",
    "WRITES_LABEL",
    "CheckpointRow",
    "CorruptCheckpointError",
    "LangGraphSaver",
    "Ref",
    "ThreadOwnerError",
    "WriteRow",
]

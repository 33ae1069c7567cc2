"""LangGraph's checkpointer conformance suite (PyPI `langgraph-checkpoint-conformance`) against
mnemic's savers, through their async methods (what the suite calls) and again through their sync
methods (`SyncPath` below runs the same suite on them), beside LangGraph's own InMemorySaver and
AsyncSqliteSaver measured in the same run.

A saver fails here if any base test fails, or any test of an optional capability it implements.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, EXTENDED_CAPABILITIES
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver

from mnemic.checkpoints import JsonCheckpointSaver, SqliteCheckpointSaver

BASE = {c.value for c in BASE_CAPABILITIES}
EXTENDED = {c.value for c in EXTENDED_CAPABILITIES}


class SyncPath(BaseCheckpointSaver):
    """Exposes a saver's sync methods under the async names the suite calls, so the whole suite
    runs through the sync path (on the event loop's thread, as a sync graph would call them)."""

    def __init__(self, inner: BaseCheckpointSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for item in self.inner.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.inner.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.inner.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.inner.prune(thread_ids, strategy=strategy)


def _run(name: str, make: Any) -> CapabilityReport:
    @checkpointer_test(name=name)
    async def factory() -> Any:
        saver = make()
        try:
            yield saver
        finally:
            close = getattr(getattr(saver, "inner", saver), "close", None)
            if close is not None:
                close()

    return asyncio.run(validate(factory))


def _counts(report: CapabilityReport, capabilities: set[str]) -> tuple[int, int]:
    results = [report.results[c] for c in capabilities if c in report.results]
    return sum(r.tests_passed for r in results), sum(r.tests_passed + r.tests_failed for r in results)


def _failures(report: CapabilityReport) -> list[str]:
    return [failure for result in report.results.values() for failure in result.failures]


def _saver_factories(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    counter = iter(range(1000))
    yield "JsonCheckpointSaver", lambda: JsonCheckpointSaver(tmp_path / f"json{next(counter)}")
    yield "SqliteCheckpointSaver", lambda: SqliteCheckpointSaver(tmp_path / f"db{next(counter)}.sqlite")


@pytest.mark.parametrize("path", ["async", "sync"])
@pytest.mark.parametrize("kind", ["JsonCheckpointSaver", "SqliteCheckpointSaver"])
def test_mnemic_savers_pass_the_whole_conformance_suite(tmp_path: Path, kind: str, path: str) -> None:
    make = dict(_saver_factories(tmp_path))[kind]
    factory = make if path == "async" else (lambda: SyncPath(make()))
    report = _run(f"{kind} ({path})", factory)

    assert _failures(report) == []
    assert _counts(report, BASE) == (58, 58)
    # No reference saver implements the optional capabilities; ours implement all three.
    assert {c: report.results[c].detected for c in EXTENDED} == dict.fromkeys(EXTENDED, True)
    assert _counts(report, EXTENDED) == (23, 23)
    assert report.conformance_level() == "FULL"


def test_reference_savers_measured_in_the_same_run(tmp_path: Path) -> None:
    """The figures the mnemic savers are compared with (InMemorySaver and AsyncSqliteSaver 58/58)."""
    aiosqlite_saver = pytest.importorskip("langgraph.checkpoint.sqlite.aio")
    report = _run("InMemorySaver", InMemorySaver)
    assert _counts(report, BASE) == (58, 58)

    @checkpointer_test(name="AsyncSqliteSaver")
    async def sqlite_reference() -> Any:
        async with aiosqlite_saver.AsyncSqliteSaver.from_conn_string(str(tmp_path / "ref.sqlite")) as saver:
            yield saver

    reference = asyncio.run(validate(sqlite_reference))
    assert _counts(reference, BASE) == (58, 58)
    assert not any(reference.results[c].detected for c in EXTENDED)

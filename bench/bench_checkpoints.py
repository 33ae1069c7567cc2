"""What a checkpoint write costs per event: mnemic's providers against CrewAI's own, same run.

    python bench/bench_checkpoints.py                  # 200 writes per provider, interleaved
    python bench/bench_checkpoints.py --writes 500

The payloads are real: a crew with a CrewMemory runs once with CrewAI's JsonProvider on every
event, and the checkpoints it wrote (CrewAI's serialised runtime state) are what every provider
then writes, round-robin, one write per provider in turn, so machine noise hits all alike. mnemic's
providers run as in a kickoff: owned by a user (a sidecar file, or the user_id column, and the
stamp), registered with the user's namespace. Reported per provider: median and p90 milliseconds
per write and the ratio to CrewAI's JsonProvider. For scale, "durable write" is one bare
`core.durable.write_atomic` of the same data (temp file, fsync, rename, directory fsync): what any
crash-safe file write costs on this disk. CrewAI's SqliteProvider needs jsonb (SQLite 3.45+):
on an older SQLite every write fails, which is reported; when `pysqlite3` (a newer SQLite) is
installed, CrewAI's and mnemic's SQLite providers are also timed on it.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def real_payloads(work: Path) -> list[str]:
    """CrewAI's serialised runtime state at each event of a small crew's kickoff."""
    from crewai import Agent, Crew, Task
    from crewai.events.event_bus import crewai_event_bus
    from crewai.state.checkpoint_config import CheckpointConfig
    from crewai.state.provider.json_provider import JsonProvider
    from crewai_helpers import ScriptedLLM

    from mnemic import Memory
    from mnemic.core.embeddings import HashEmbedder
    from mnemic.integrations.crewai import CrewMemory

    location = work / "source"
    with Memory(work / "store", embedder=HashEmbedder()) as memory:
        memory.set_policy(mode="auto")
        llm = ScriptedLLM({"notes": "You run the orders on MySQL and prefer managed services.",
                           "Recommend": "You should move the orders to a managed PostgreSQL."})
        intake = Agent(role="Intake", goal="Understand", backstory="Careful listener.", llm=llm)
        planner = Agent(role="Planner", goal="Plan", backstory="Pragmatic engineer.", llm=llm)
        crew = Crew(agents=[intake, planner], memory=CrewMemory(memory), tasks=[
            Task(description="Take notes about the customer: {message}", expected_output="notes", agent=intake),
            Task(description="Recommend a database.", expected_output="advice", agent=planner)],
            checkpoint=CheckpointConfig(location=str(location), provider=JsonProvider(), on_events=["*"]))
        crew.kickoff(inputs={"user_id": "alice", "message": "We are outgrowing our database."})
        crewai_event_bus.flush()
    return [p.read_text() for p in sorted(location.rglob("*.json"))]


class DurableWrite:
    """A bare crash-safe write of the data, as the reference for what the disk costs."""

    def checkpoint(self, data: str, location: str) -> str:
        from mnemic.core.durable import write_atomic

        return str(write_atomic(Path(location) / f"{time.perf_counter_ns()}.json", data))


def providers(memory: Any) -> dict[str, Any]:
    from crewai.state.provider.json_provider import JsonProvider
    from crewai.state.provider.sqlite_provider import SqliteProvider

    from mnemic.checkpoints.crewai_json import JsonCheckpointProvider
    from mnemic.checkpoints.crewai_sqlite import SqliteCheckpointProvider
    from mnemic.checkpoints.owners import Owner, set_owner_resolver

    set_owner_resolver(lambda user_key: Owner(user_id="alice", memory=memory))
    return {
        "durable write": (DurableWrite(), "json"),
        "crewai JsonProvider": (JsonProvider(), "json"),
        "mnemic JsonCheckpointProvider": (JsonCheckpointProvider(), "json"),
        "crewai SqliteProvider": (SqliteProvider(), "db"),
        "mnemic SqliteCheckpointProvider": (SqliteCheckpointProvider(), "db"),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(entries: dict[str, Any], payloads: list[str], writes: int, work: Path) -> dict[str, Any]:
    times: dict[str, list[float]] = {name: [] for name in entries}
    errors: dict[str, str] = {}
    for number in range(writes):
        data = payloads[number % len(payloads)]
        for name, (provider, kind) in entries.items():
            if name in errors:
                continue
            location = str(work / name.replace(" ", "_") / ("c.db" if kind == "db" else "c"))
            start = time.perf_counter()
            try:
                provider.checkpoint(data, location)
            except Exception as exc:  # CrewAI's SqliteProvider on SQLite < 3.45
                errors[name] = f"{type(exc).__name__}: {exc}"
                continue
            times[name].append((time.perf_counter() - start) * 1000)
    reference = statistics.median(times["crewai JsonProvider"])
    report: dict[str, Any] = {}
    for name, samples in times.items():
        if name in errors:
            report[name] = {"fails": errors[name]}
            continue
        median = statistics.median(samples)
        report[name] = {"writes": len(samples), "median_ms": round(median, 3),
                        "p90_ms": round(percentile(samples, 0.9), 3),
                        "ratio_to_crewai_json": round(median / reference, 2)}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    from mnemic import Memory
    from mnemic.core.embeddings import HashEmbedder

    with tempfile.TemporaryDirectory(prefix="mnemic-bench-cp-") as folder:
        work = Path(folder)
        payloads = real_payloads(work)
        sizes = [len(p.encode()) for p in payloads]
        with Memory(work / "bench-store", embedder=HashEmbedder()) as memory:
            result: dict[str, Any] = {
                "sqlite_version": sqlite3.sqlite_version, "payloads": len(payloads),
                "payload_kib_median": round(statistics.median(sizes) / 1024, 1),
                "this_sqlite": measure(providers(memory), payloads, args.writes, work / "this"),
            }
            try:
                import pysqlite3.dbapi2 as newer  # type: ignore[import-not-found]
            except ImportError:
                newer = None
            if newer is not None:
                import crewai.state.provider.sqlite_provider as crewai_sqlite

                import mnemic.core.durable as durable

                crewai_sqlite.sqlite3 = newer  # type: ignore[attr-defined]
                durable.sqlite3 = newer  # type: ignore[attr-defined]
                entries = providers(memory)
                result[f"sqlite_{newer.sqlite_version}"] = measure(entries, payloads, args.writes, work / "newer")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

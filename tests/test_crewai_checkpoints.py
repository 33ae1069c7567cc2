"""mnemic's CrewAI checkpoint providers in real kickoffs: owned by the run's user, restorable by
CrewAI, written on this machine's SQLite, failures reported on the crew's result, pruned, erased,
and a crew that died after its first task finished by a fresh process with its memory attached."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("crewai")

from crewai import Agent, Crew, Task
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.checkpoint_events import CheckpointFailedEvent
from crewai.state.checkpoint_config import CheckpointConfig
from crewai.state.provider.sqlite_provider import SqliteProvider
from crewai_helpers import ScriptedLLM

from mnemic import Memory
from mnemic.checkpoints import catalog, crewai_db
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.retention import OWNER_SUFFIX
from mnemic.integrations.crewai import (
    CrewMemory,
    JsonCheckpointProvider,
    MnemicCrewOutput,
    SqliteCheckpointProvider,
    restore_crew,
)
from mnemic.tools.core import CONTEXT_NOTE

TESTS = Path(__file__).resolve().parent
INTAKE = "Write down what matters about the customer."
PLAN = "Recommend a database for the customer's new project."
PROVIDERS = {"json": (JsonCheckpointProvider, "checkpoints"), "sqlite": (SqliteCheckpointProvider, "checkpoints.db"),
             # CrewAI's own: its default when CheckpointConfig names none, and its SQLite flavour.
             "crewai-default": (None, "checkpoints"), "crewai-sqlite": (SqliteProvider, "checkpoints.db")}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.set_policy(mode="auto")
        yield mem


def make_crew(memory: Any, llm: ScriptedLLM, checkpoint: CheckpointConfig | None) -> Crew:
    intake = Agent(role="Intake Specialist", goal="Understand the customer", backstory="Careful.", llm=llm)
    planner = Agent(role="Planner", goal="Plan the project", backstory="Pragmatic.", llm=llm)
    return Crew(agents=[intake, planner], memory=memory, name="support-crew", checkpoint=checkpoint, tasks=[
        Task(description=INTAKE + "\n{message}", expected_output="Notes.", agent=intake),
        Task(description=PLAN, expected_output="A recommendation.", agent=planner),
    ])


def config(kind: str, tmp_path: Path, **options: Any) -> CheckpointConfig:
    provider, name = PROVIDERS[kind]
    if provider is not None:
        options["provider"] = provider()
    return CheckpointConfig(location=str(tmp_path / name), on_events=["task_completed"], **options)


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_checkpoints_are_owned_restorable_by_crewai_and_erased_with_their_user(kind: str, store: Memory,
                                                                               tmp_path: Path) -> None:
    # With CrewAI's own providers too: they record no owner, so a crew left on one kept its
    # users' checkpoints out of forget()'s reach; mnemic's provider for the format takes over.
    cfg = config(kind, tmp_path)
    crew_memory = CrewMemory(store)
    for user in ("alice", "bob"):
        llm = ScriptedLLM({INTAKE: f"You are {user} and you prefer PostgreSQL."})
        result = make_crew(crew_memory, llm, cfg).kickoff(inputs={"user_id": user, "message": "Hello."})
        assert isinstance(result, MnemicCrewOutput) and result.persistence_failures == []
    crewai_event_bus.flush()

    listed = catalog.list_checkpoints(cfg.location)
    assert [i.user_id for i in listed] == ["alice", "alice", "bob", "bob"]
    if kind == "json":
        assert all(Path(i.restore_from + OWNER_SUFFIX).exists() for i in listed)
        assert all(Path(i.restore_from).stat().st_mode & 0o077 == 0 for i in listed)  # not world-readable
    # CrewAI's own reader restores them (it picks its reader by file type, not by provider).
    restored = Crew.from_checkpoint(CheckpointConfig(restore_from=listed[0].restore_from))
    assert restored.tasks[0].output is not None and "alice" in restored.tasks[0].output.raw

    report = store.forget(user_id="alice")
    assert report.retained["checkpoints"] == 2
    assert [i.user_id for i in catalog.list_checkpoints(cfg.location)] == ["bob", "bob"]
    assert not any("alice" in p.name for p in tmp_path.rglob("*"))


def test_crewais_sqlite_provider_is_replaced_by_one_that_writes_on_this_machines_sqlite(
        store: Memory, tmp_path: Path) -> None:
    # CrewAI's SqliteProvider writes jsonb, which SQLite < 3.45 lacks: each checkpoint failed.
    stock_db = tmp_path / "stock.db"
    stock = make_crew(CrewMemory(store), ScriptedLLM(), CheckpointConfig(
        location=str(stock_db), provider=SqliteProvider(), on_events=["task_completed"])).kickoff(
        inputs={"user_id": "alice", "message": "Hello."})
    crewai_event_bus.flush()
    assert stock.persistence_failures == []
    assert [i.user_id for i in catalog.list_checkpoints(stock_db)] == ["alice", "alice"]


def test_a_failed_checkpoint_raises_to_crewai_and_is_on_the_crews_result(store: Memory, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the checkpoint directory should be")
    seen: list[str] = []

    def on_failed(source: Any, event: CheckpointFailedEvent) -> None:
        seen.append(event.error)

    crewai_event_bus.register_handler(CheckpointFailedEvent, on_failed)
    try:
        result = make_crew(CrewMemory(store), ScriptedLLM(), CheckpointConfig(
            location=str(blocker), provider=JsonCheckpointProvider(), on_events=["task_completed"])).kickoff(
            inputs={"user_id": "alice", "message": "Hello."})
        crewai_event_bus.flush()
    finally:
        crewai_event_bus.off(CheckpointFailedEvent, on_failed)
    assert isinstance(result, MnemicCrewOutput) and result.raw  # the crew's work is not lost
    assert len(result.persistence_failures) == 2 and len(seen) == 2
    failure = result.persistence_failures[0]
    assert failure.what == "checkpoint" and failure.location == str(blocker) and failure.error


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_max_checkpoints_prunes_the_oldest_with_their_owner_records(kind: str, store: Memory,
                                                                    tmp_path: Path) -> None:
    cfg = config(kind, tmp_path, max_checkpoints=1)
    make_crew(CrewMemory(store), ScriptedLLM(), cfg).kickoff(inputs={"user_id": "alice", "message": "Hi."})
    crewai_event_bus.flush()
    kept = catalog.list_checkpoints(cfg.location)
    assert len(kept) == 1 and kept[0].user_id == "alice"
    if kind == "json":
        assert len(list(Path(cfg.location).rglob("*" + OWNER_SUFFIX))) == 1


def test_a_newer_sqlite_reads_and_writes_the_same_database(store: Memory, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    newer = pytest.importorskip("pysqlite3.dbapi2", reason="pysqlite3-binary brings a newer SQLite")
    assert newer.sqlite_version_info >= (3, 45)
    db = str(tmp_path / "shared.db")
    # CrewAI's provider on a newer SQLite writes binary JSON rows (jsonb).
    import crewai.state.provider.sqlite_provider as crewai_sqlite

    monkeypatch.setattr(crewai_sqlite, "sqlite3", newer)
    crewai_location = SqliteProvider().checkpoint(json.dumps({"entities": [], "from": "crewai"}), db)
    monkeypatch.undo()
    # mnemic's, on this machine's SQLite, adds its rows (and its owner column) to that database.
    ours = SqliteCheckpointProvider()
    location = ours.checkpoint(json.dumps({"entities": [], "from": "mnemic"}), db)
    assert json.loads(ours.from_checkpoint(location))["from"] == "mnemic"
    rows = catalog.list_checkpoints(db)
    assert [r.note is not None for r in rows] == [True, False]  # the jsonb row is named as such
    if sqlite3.sqlite_version_info < (3, 45):
        with pytest.raises(ValueError, match=r"3\.45"):
            ours.from_checkpoint(crewai_location)
    # And mnemic's provider running on the newer SQLite reads both (two SQLite libraries must not
    # share a database within one process, so the first one's connections are closed).
    import mnemic.core.durable as durable

    crewai_db.close_connections()
    monkeypatch.setattr(durable, "sqlite3", newer)
    assert json.loads(ours.from_checkpoint(crewai_location))["from"] == "crewai"
    again = ours.checkpoint(json.dumps({"entities": [], "from": "mnemic on a newer sqlite"}), db)
    assert json.loads(ours.from_checkpoint(again))["from"] == "mnemic on a newer sqlite"
    crewai_db.close_connections()


PHASE_ONE = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import crewai_helpers  # offline environment
    from crewai_helpers import ScriptedLLM, final
    from crewai.state.checkpoint_config import CheckpointConfig
    from mnemic import Memory
    from mnemic.core.embeddings import HashEmbedder
    from mnemic.integrations.crewai import CrewMemory, {provider}
    from test_crewai_checkpoints import INTAKE, PLAN, make_crew

    def respond(text):
        current = text.split("Current Task:", 1)[-1]
        if PLAN in current:
            raise RuntimeError("the model provider is down")
        return final("You run the shop's orders on a 40 GB MySQL database." if INTAKE in current else "Noted.")

    memory = Memory({store!r}, embedder=HashEmbedder())
    memory.set_policy(mode="auto")
    memory.remember("Alice's company picks a PostgreSQL database for every new project.", user_id="alice")
    crew_memory = CrewMemory(memory)
    crew = make_crew(crew_memory, ScriptedLLM(responder=respond), CheckpointConfig(
        location={location!r}, provider={provider}(), on_events=["task_completed"]))
    try:
        with crew_memory.for_user("alice"):  # the user is not in the inputs: the checkpoint must keep it
            crew.kickoff(inputs={{"message": "We need a new analytics store."}})
    except Exception as exc:
        print("crew failed:", type(exc).__name__, exc)
    memory.close()
""")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_crew_that_died_after_its_first_task_is_finished_by_a_fresh_process(kind: str, tmp_path: Path) -> None:
    provider, name = PROVIDERS[kind]
    store_path, location = tmp_path / "m", tmp_path / name
    script = PHASE_ONE.format(tests=str(TESTS), provider=provider.__name__, store=str(store_path),
                              location=str(location))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(TESTS.parent)})
    assert "crew failed" in done.stdout, done.stdout + done.stderr[-3000:]
    saved = catalog.list_checkpoints(location)
    assert len(saved) == 1 and saved[0].user_id == "alice"  # after task 1, before task 2 failed

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        crew_memory = CrewMemory(memory)
        for restore in (restore_crew, Crew.from_checkpoint):
            llm = ScriptedLLM({PLAN: "You prefer PostgreSQL with TimescaleDB for analytics."})
            crew = restore(CheckpointConfig(restore_from=saved[0].restore_from))
            for agent in crew.agents:
                agent.llm = llm  # LLM clients are not kept in checkpoints
            result = crew.kickoff()

            assert crew.memory is crew_memory  # the live CrewMemory, not CrewAI's rebuilt plain Memory
            assert isinstance(result, MnemicCrewOutput) and "PostgreSQL" in result.raw
            assert [p for p in llm.prompts if INTAKE in p.split("Current Task:", 1)[-1]] == []  # not run again
            prompt = llm.prompts_for(PLAN)[0]
            assert "40 GB MySQL" in prompt  # task 1's output, from the checkpoint
            # alice's memory, recalled for her:
            assert "PostgreSQL database for every new project" in prompt.split(CONTEXT_NOTE, 1)[1]
            assert isinstance(crew.checkpoint.provider, provider)  # later checkpoints stay mnemic's
        crewai_event_bus.flush()
        assert {i.user_id for i in catalog.list_checkpoints(location)} == {"alice"}
        assert any("TimescaleDB" in r.text for r in memory.list(user_id="alice"))


def test_restore_crew_brings_back_a_user_the_inputs_never_named(store: Memory, tmp_path: Path) -> None:
    from crewai.hooks.dispatch import HookAborted
    from crewai_helpers import final

    store.remember("Alice's company picks a PostgreSQL database for every new project.", user_id="alice")

    def respond(text: str) -> str:
        if PLAN in text.split("Current Task:", 1)[-1]:
            raise RuntimeError("the model provider is down")
        return final("You run the orders on MySQL.")

    cfg = config("json", tmp_path)
    crew_memory = CrewMemory(store)
    crew = make_crew(crew_memory, ScriptedLLM(responder=respond), cfg)
    with crew_memory.for_user("alice"), pytest.raises(Exception, match="provider is down"):
        crew.kickoff()  # no inputs: nothing but the checkpoint itself can say whose run this was
    crewai_event_bus.flush()
    saved = catalog.list_checkpoints(cfg.location)
    assert [i.user_id for i in saved] == ["alice"]

    with pytest.raises(HookAborted, match="user"):
        Crew.from_checkpoint(CheckpointConfig(restore_from=saved[0].restore_from)).kickoff()
    llm = ScriptedLLM({PLAN: "You prefer PostgreSQL."})
    restored = restore_crew(CheckpointConfig(restore_from=saved[0].restore_from))
    for agent in restored.agents:
        agent.llm = llm
    result = restored.kickoff()
    assert "PostgreSQL database for every new project" in llm.prompts_for(PLAN)[0]
    # The result is still CrewAI's CrewOutput in every way.
    assert str(result) == result.raw and result.model_dump()["raw"] == result.raw
    assert [t.raw for t in result.tasks_output][-1].endswith("You prefer PostgreSQL.")


def test_an_applications_own_provider_is_left_alone_on_every_kickoff(store: Memory, tmp_path: Path) -> None:
    # A subclass of CrewAI's SqliteProvider is the application's (its own layout, encryption...):
    # once its database existed, the next kickoff swapped mnemic's provider in beside it.
    from contextlib import closing

    written: list[str] = []

    class AppSqliteProvider(SqliteProvider):
        def checkpoint(self, data: str, location: str, *, parent_id: str | None = None,  # type: ignore[override]
                       branch: str = "main") -> str:
            written.append(location)
            with closing(sqlite3.connect(location)) as connection, connection:
                connection.execute("CREATE TABLE IF NOT EXISTS app_checkpoints (id TEXT, data TEXT)")
                connection.execute("INSERT INTO app_checkpoints VALUES (?, ?)", (str(len(written)), data))
            return f"{location}#{len(written)}"

    cfg = CheckpointConfig(location=str(tmp_path / "app.db"), provider=AppSqliteProvider(),
                           on_events=["task_completed"])
    for _ in range(2):
        crew = make_crew(CrewMemory(store), ScriptedLLM(), cfg)
        crew.kickoff(inputs={"user_id": "alice", "message": "Hello."})
        crewai_event_bus.flush()
        assert type(crew.checkpoint.provider) is AppSqliteProvider
    assert len(written) == 4  # two tasks a kickoff, all through the application's provider

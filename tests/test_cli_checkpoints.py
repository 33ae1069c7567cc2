"""`mnemic checkpoints` and `mnemic kickoffs`: what an operator sees of saved runs, from any process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemic import Memory
from mnemic.checkpoints import crewai_db, crewai_files
from mnemic.checkpoints.owners import Owner, stamp
from mnemic.cli.main import cli
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.retention import RetainedPlace


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MNEMIC_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("MNEMIC_EMBEDDER", "hash")
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True) -> str:
        result = runner.invoke(cli, list(args), catch_exceptions=False)
        assert (result.exit_code == 0) is ok, result.output
        return result.output

    return invoke


def _state(user: str, done: bool) -> str:
    crew = {"entity_type": "crew", "name": "support", "id": "c1", "checkpoint_inputs": {"user_id": user},
            "tasks": [{"description": "Take notes", "output": {"raw": "notes"}},
                      {"description": "Plan", "output": {"raw": "plan"} if done else None}]}
    data = json.dumps({"crewai_version": "1.15", "parent_id": None, "branch": "main", "entities": [crew],
                       "event_record": {"nodes": {"a": {}, "b": {}}}, "trigger": "task_completed"})
    return stamp(data, Owner(user_id=user))


def _json_checkpoints(location: Path) -> list[Path]:
    paths = []
    for user, done in (("alice", False), ("alice", True), ("bob", False)):
        path = crewai_files.new_checkpoint_path(location, "main")
        crewai_files.write_checkpoint(path, _state(user, done), user)
        paths.append(path)
    return paths


def test_checkpoints_list_show_and_prune_a_json_location(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    location = tmp_path / "checkpoints"
    paths = _json_checkpoints(location)
    listed = json.loads(run("checkpoints", "list", str(location), "--json"))
    assert [c["user_id"] for c in listed] == ["alice", "alice", "bob"]
    assert [c["restore_from"] for c in listed] == [str(p) for p in paths]
    assert len(json.loads(run("checkpoints", "list", str(location), "--user", "bob", "--json"))) == 1
    assert "alice" in run("checkpoints", "list", str(location))  # the rich table

    shown = json.loads(run("checkpoints", "show", str(paths[1]), "--json"))
    assert shown["summary"]["user_id"] == "alice" and shown["summary"]["events"] == 2
    assert [t["done"] for t in shown["summary"]["entities"][0]["tasks"]] == [True, True]
    by_id = run("checkpoints", "show", crewai_files.checkpoint_id(paths[0]), "--location", str(location))
    assert "Take notes" in by_id and "alice" in by_id

    assert json.loads(run("checkpoints", "prune", str(location), "--keep", "1", "--yes", "--json")) == {
        str(location): {"removed": 2, "leftovers": 0}}
    assert [c["restore_from"] for c in json.loads(run("checkpoints", "list", str(location), "--json"))] == [
        str(paths[2])]


def test_checkpoints_of_a_sqlite_file_and_of_the_namespaces_places(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "cp.db"
    ids = [crewai_db.insert(db, _state(u, False), parent_id=None, branch="main", owner=u) for u in ("alice", "bob")]
    with Memory(tmp_path / "store", embedder=HashEmbedder()) as memory:
        memory.retain(RetainedPlace(label="checkpoints", kind="sqlite", path=str(db), tables=("checkpoints",)))
    listed = json.loads(run("checkpoints", "list", "--json"))  # no location: the namespace knows it
    assert [(c["id"], c["user_id"], c["format"]) for c in listed] == [(ids[0], "alice", "sqlite"),
                                                                     (ids[1], "bob", "sqlite")]
    assert "support" in run("checkpoints", "show", f"{db}#{ids[1]}")
    assert "no checkpoint" in run("checkpoints", "show", "nope", ok=False)
    assert "no checkpoints at" in run("checkpoints", "list", str(tmp_path / "missing"), ok=False)


def test_kickoffs_list_and_show(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "store", embedder=HashEmbedder()) as memory:
        first = memory.runs.begin(group="k1", group_name="planning", user_id="alice", inputs={"message": "Move"})
        memory.runs.record_step(first.run_id, 0, {"task_id": "t-1", "agent": "Planner",
                                                  "output": {"raw": "Summary of the move.", "description": "Sum"}},
                                step_id="t-1")
        memory.runs.begin(group="k2", group_name="triage", user_id="bob")
    assert "--all-users" in run("kickoffs", "list", "--json", ok=False)  # whose kickoffs, said out loud
    listed = json.loads(run("kickoffs", "list", "--all-users", "--json"))
    assert [(k["group_name"], k["user_id"]) for k in listed] == [("triage", "bob"), ("planning", "alice")]
    planning = json.loads(run("kickoffs", "list", "--crew", "planning", "--all-users", "--json"))
    assert [k["user_id"] for k in planning] == ["alice"]
    assert [k["group_name"] for k in json.loads(run("kickoffs", "list", "--user", "bob", "--json"))] == ["triage"]
    assert "planning" in run("kickoffs", "list", "--all-users")
    assert "anonymous:" in run("kickoffs", "list", "--user", "anonymous:x", ok=False)  # refused as memory list does
    shown = run("kickoffs", "show", first.run_id)
    assert "t-1" in shown and "Summary of the move." in shown and "alice" in shown
    assert json.loads(run("kickoffs", "show", first.run_id, "--json"))["steps"][0]["step_id"] == "t-1"
    assert "no kickoff" in run("kickoffs", "show", "0000", ok=False)


def test_control_characters_in_a_checkpoint_are_shown_never_sent_to_the_terminal(  # type: ignore[no-untyped-def]
        run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")
    sequence = "\x1b]0;pwned\x07\x1b[2J"
    state = json.loads(_state("alice", True))
    state["entities"][0]["tasks"][0]["description"] = "Take notes " + sequence
    state["entities"][0]["checkpoint_inputs"]["topic"] = sequence
    db = tmp_path / "cp.db"
    checkpoint = crewai_db.insert(db, stamp(json.dumps(state), Owner(user_id="alice")), parent_id=None,
                                  branch="main", owner="alice")
    shown = run("checkpoints", "show", f"{db}#{checkpoint}")
    assert "\x1b" not in shown and "\x07" not in shown
    assert "Take notes \\x1b]0;pwned\\x07\\x1b[2J" in shown  # as written, its control characters made visible

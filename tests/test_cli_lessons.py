"""`mnemic lessons list|invalidate`: the operator's view of what reviewers taught, per user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemic import Memory
from mnemic.cli.main import cli
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.lessons import LessonPlace, LessonStore


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("MNEMIC_STORE", str(path))
    monkeypatch.setenv("MNEMIC_EMBEDDER", "hash")
    monkeypatch.setenv("COLUMNS", "250")  # the table is read in full, not folded to 80 columns
    return path


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) is ok, result.output
    return result.output


def seed(store: Path) -> dict[str, str]:
    with Memory(store, embedder=HashEmbedder()) as memory:
        lessons = LessonStore(memory)
        draft, summary = LessonPlace("writer", "draft"), LessonPlace("writer", "summary")
        ids = {
            "draft": lessons.learn(["Cite a source for every claim."], user_id="alice", place=draft,
                                   reviewer="bob", thread="t1", framework="langgraph")[0].id,
            "summary": lessons.learn(["Use bullet points."], user_id="alice", place=summary,
                                     framework="langgraph")[0].id,
            "carol": lessons.learn(["Write in French."], user_id="carol", place=draft)[0].id,
        }
        fact = memory.remember("Alice likes tea.", user_id="alice")
        assert fact is not None
        ids["fact"] = fact.id
    return ids


def test_list_is_per_user_and_narrows_by_place(store: Path) -> None:
    ids = seed(store)
    listed = json.loads(run("lessons", "list", "--user", "alice", "--json"))
    assert [item["id"] for item in listed] == [ids["summary"], ids["draft"]]
    first = next(item for item in listed if item["id"] == ids["draft"])
    assert (first["flow"], first["step"], first["reviewer"], first["thread"], first["framework"]) == (
        "writer", "draft", "bob", "t1", "langgraph")
    assert "Alice likes tea." not in json.dumps(listed)  # facts are not lessons
    narrowed = json.loads(run("lessons", "list", "--user", "alice", "--where", "writer/draft", "--json"))
    assert [item["id"] for item in narrowed] == [ids["draft"]]
    assert json.loads(run("lessons", "list", "--user", "alice", "--where", "other", "--json")) == []
    table = run("lessons", "list", "--user", "alice")
    assert "writer/draft" in table and "Cite a source for every claim." in table
    assert "bob in t1 (langgraph)" in table and "Write in French" not in table
    everyone = json.loads(run("lessons", "list", "--all-users", "--json"))
    assert {item["user_id"] for item in everyone} == {"alice", "carol"}


def test_list_needs_a_user_or_all_users_and_a_readable_place(store: Path) -> None:
    seed(store)
    assert "--all-users" in run("lessons", "list", ok=False)
    assert "flow/step" in run("lessons", "list", "--user", "alice", "--where", "/", ok=False)
    out = run("lessons", "list", "--user", "alice", "--limit", "-1", ok=False)  # not "all but the oldest"
    assert "limit must be between 1 and 100000" in out and "Traceback" not in out


def test_invalidate_withdraws_a_lesson_and_refuses_a_fact(store: Path) -> None:
    ids = seed(store)
    out = run("lessons", "invalidate", ids["draft"], "--reason", "sources are optional now")
    assert "withdrawn" in out and "sources are optional now" in out
    assert "already withdrawn" in run("lessons", "invalidate", ids["draft"], "--reason", "again")
    assert [x["id"] for x in json.loads(run("lessons", "list", "--user", "alice", "--json"))] == [ids["summary"]]
    shown = run("lessons", "list", "--user", "alice", "--include-invalid")
    assert "sources are optional now" in shown
    assert "not a lesson" in run("lessons", "invalidate", ids["fact"], "--reason", "x", ok=False)
    assert "no memory with id 'nope'" in run("lessons", "invalidate", "nope", "--reason", "x", ok=False)
    with Memory(store, embedder=HashEmbedder()) as memory:
        assert memory.get(ids["draft"]).invalid_reason == "sources are optional now"
        assert memory.history(ids["draft"])[-1].actor == "operator"

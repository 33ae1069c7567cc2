"""Erasure reaches what a namespace keeps of a user beside their records (checkpoints, kickoffs...)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mnemic import ErasureReport, Memory, RetainedPlace
from mnemic.core.durable import connect_sqlite, transaction, write_atomic
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.retention import mark_owner, owner_of

SECRET_TEXT = "carol-only-marker-7f3a9"


def _checkpoint_db(path: Path) -> None:
    conn = connect_sqlite(path)
    with transaction(conn):
        conn.execute("CREATE TABLE IF NOT EXISTS checkpoints (id TEXT PRIMARY KEY, user_id TEXT, body TEXT)")
        conn.execute("CREATE TABLE IF NOT EXISTS writes (checkpoint_id TEXT, user_id TEXT, body TEXT)")
        for n in range(3):
            conn.execute("INSERT INTO checkpoints VALUES (?, ?, ?)", (f"c{n}", "carol", SECRET_TEXT * 20))
            conn.execute("INSERT INTO writes VALUES (?, ?, ?)", (f"c{n}", "carol", SECRET_TEXT))
        conn.execute("INSERT INTO checkpoints VALUES ('d0', 'dave', 'dave stays')")
    conn.close()


def _files_with_marker(root: Path, marker: str) -> list[Path]:
    needle = marker.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_forget_user_erases_registered_sqlite_rows_and_their_bytes(memory: Memory, tmp_path: Path) -> None:
    db = tmp_path / "side" / "checkpoints.sqlite"
    _checkpoint_db(db)
    memory.retain(RetainedPlace(label="checkpoints", kind="sqlite", path=str(db), tables=("checkpoints", "writes")))
    memory.remember("Carol likes tea.", user_id="carol")

    report = memory.forget(user_id="carol")

    assert isinstance(report, ErasureReport)
    assert report == 1 and report.records == 1
    assert report.retained == {"checkpoints": 3}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT user_id FROM checkpoints").fetchall() == [("dave",)]
        assert conn.execute("SELECT count(*) FROM writes").fetchone() == (0,)
    assert _files_with_marker(db.parent, SECRET_TEXT) == []


def test_forget_user_erases_owned_files_only(memory: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    for user, name in (("carol", "a.json"), ("carol", "sub/b.json"), ("dave", "c.json")):
        mark_owner(folder / name, user)
        write_atomic(folder / name, f'{{"user": "{user}", "text": "{SECRET_TEXT}"}}')
    memory.retain(RetainedPlace(label="checkpoints", kind="files", path=str(folder)))

    report = memory.forget(user_id="carol")

    assert report.retained == {"checkpoints": 2}
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.json")) == ["c.json"]
    assert owner_of(folder / "c.json") is not None and owner_of(folder / "a.json") is None


def test_narrower_forget_leaves_retained_state_alone(memory: Memory, tmp_path: Path) -> None:
    db = tmp_path / "cp.sqlite"
    _checkpoint_db(db)
    memory.retain(RetainedPlace(label="checkpoints", kind="sqlite", path=str(db), tables=("checkpoints",)))
    memory.remember("Carol likes tea.", user_id="carol", scope="/a")
    report = memory.forget(user_id="carol", scope="/a")
    assert report == 1 and report.retained == {}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints WHERE user_id = 'carol'").fetchone() == (3,)


def test_places_are_kept_by_the_namespace_for_other_processes(store_path: Path, tmp_path: Path) -> None:
    db = tmp_path / "cp.sqlite"
    _checkpoint_db(db)
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.retain(RetainedPlace(label="checkpoints", kind="sqlite", path=str(db), tables=("checkpoints",)))
        memory.retain(RetainedPlace(label="checkpoints", kind="sqlite", path=str(db), tables=("checkpoints",)))
        assert len(memory.retained_places()) == 1
        memory.reset()  # emptying the memory does not forget where users' other data lives
        assert len(memory.retained_places()) == 1
    # Another process (an operator's CLI) erases the user there too.
    code = (
        "from mnemic import Memory; from mnemic.core.embeddings import HashEmbedder\n"
        f"m = Memory({str(store_path)!r}, embedder=HashEmbedder())\n"
        "r = m.forget(user_id='carol'); print(r.retained['checkpoints']); m.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.stdout.strip() == "3"


def test_attached_state_is_erased_and_a_failing_place_is_reported(memory: Memory, tmp_path: Path) -> None:
    class Kickoffs:
        label = "kickoffs"

        def __init__(self) -> None:
            self.erased: list[str] = []

        def erase_user(self, user_id: str) -> int:
            self.erased.append(user_id)
            return 2

    class Broken:
        label = "threads"
        path = "/nowhere"

        def erase_user(self, user_id: str) -> int:
            raise OSError("disk unplugged")

    kickoffs = Kickoffs()
    memory.retain(kickoffs)
    memory.retain(Broken())
    report = memory.forget(user_id="erin")
    assert report == 0 and report.retained == {"kickoffs": 2}
    assert kickoffs.erased == ["erin"]
    assert len(report.unreachable) == 1 and "disk unplugged" in report.unreachable[0]


def test_retain_refuses_what_it_cannot_erase(memory: Memory) -> None:
    with pytest.raises(TypeError, match="RetainedPlace"):
        memory.retain(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="identifiers"):
        RetainedPlace(label="x", kind="sqlite", path="/tmp/x.db", tables=("a; DROP TABLE b",))


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # no temp files left behind


TWIN = "Alice loves pottery and zebra sketches."


def test_remember_many_returns_the_id_stored_beside_an_expired_twin(tmp_path: Path) -> None:
    # The id derives from owner and text, so the caller got the expired twin's id while the
    # statement was stored under a fresh one: erasing by the returned id left the new fact live.
    import time

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        twin = memory.remember(TWIN, user_id="alice", ttl_seconds=1)
        assert twin is not None
        time.sleep(1.2)
        (returned,) = memory.remember_many([TWIN], user_id="alice")
        memory.drain_writes()
        assert returned != twin.id and memory.get(returned).is_servable()
        assert [r.id for r in memory.list(user_id="alice")] == [returned]
        memory.forget(user_id="alice", ids=[returned])
        assert memory.recall("pottery zebra", user_id="alice") == []


ACKNOWLEDGE_AND_DIE = """
import os, sys, time
from mnemic import Memory, HashEmbedder
from mnemic.core.queued_writes import QueuedWrites
QueuedWrites._persist = lambda self, *args, **kwargs: time.sleep(60)  # the writer never gets to it
memory = Memory(sys.argv[1], embedder=HashEmbedder())
print(memory.remember_many([sys.argv[2]], user_id="alice")[0], flush=True)
os._exit(0)
"""


def test_a_statement_acknowledged_beside_a_twin_that_expired_before_the_next_open_is_stored(tmp_path: Path) -> None:
    # On replay after a crash, a record holding the statement's id with the same text counted as
    # the statement landed, even when it was a twin that had expired meanwhile: the acknowledged
    # statement was dropped with nothing said.
    import time

    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember(TWIN, user_id="alice", ttl_seconds=2)
    died = subprocess.run([sys.executable, "-c", ACKNOWLEDGE_AND_DIE, str(tmp_path / "m"), TWIN],
                          capture_output=True, text=True, check=True)
    assert died.stdout.strip()
    time.sleep(2.2)
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        assert [m.record.text for m in memory.recall("pottery zebra", user_id="alice")] == [TWIN]

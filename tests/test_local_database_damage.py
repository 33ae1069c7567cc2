"""A store whose local database (lexical.sqlite3: keyword index, audit trail, write journal) was
damaged or lost. The records are in Chroma and must never be lost with it: a damaged file stops the
open with an error that names it and the way out (it used to be a bare `sqlite3.DatabaseError: file
is not a database`), and is never replaced behind the user's back, since it may hold queued writes;
a deleted or emptied one is rebuilt, saying what went with it."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemic import CorruptLocalDatabaseError, EmbedderMismatchError, Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.lock import StoreLock


def _store_with_records(path: Path) -> list[str]:
    with Memory(path, embedder=HashEmbedder()) as memory:
        ids = []
        for i in range(3):
            record = memory.remember(f"Alice fact number {i} about tea.", user_id="alice")
            assert record is not None
            ids.append(record.id)
        memory.invalidate(ids[0], reason="no longer true")
    return ids


def _assert_nothing_left_locked(path: Path) -> None:
    lock = StoreLock(path.resolve())
    lock.acquire()  # StoreLockedError while a failed open still holds the store
    lock.release()


def _garbage_header(file: Path) -> None:
    with file.open("r+b") as handle:
        handle.write(b"\x00garbage" * 16)


def _cut_in_half(file: Path) -> None:
    with file.open("r+b") as handle:
        handle.truncate(file.stat().st_size // 2)


DAMAGE: dict[str, Callable[[Path], None]] = {"garbage header": _garbage_header, "cut in half": _cut_in_half}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=list(DAMAGE))
def test_a_damaged_local_database_stops_the_open_naming_the_file_and_the_fix(
        store_path: Path, damage: Callable[[Path], None]) -> None:
    ids = _store_with_records(store_path)
    local = store_path / "lexical.sqlite3"
    damage(local)
    damaged = local.read_bytes()

    with pytest.raises(CorruptLocalDatabaseError) as caught:
        Memory(store_path, embedder=HashEmbedder())

    message = str(caught.value)
    assert caught.value.path == local
    assert f"the store's local database {local} cannot be read" in message
    for held in ("keyword index", "audit trail that history() reads", "statements remember_many() accepted"):
        assert held in message
    assert "the records themselves are in Chroma" in message
    assert "keyword index is rebuilt from Chroma" in message
    commands = next(line.strip() for line in message.splitlines() if line.strip().startswith("mv "))
    assert commands.startswith(f"mv {local} {local}.corrupt")
    # Nothing replaced or deleted (it may hold queued statements), and nothing left locked.
    assert local.read_bytes() == damaged
    _assert_nothing_left_locked(store_path)

    subprocess.run(["sh", "-c", commands], check=True)  # the fix, exactly as the message gives it
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert sorted(r.id for r in memory.list(user_id="alice", include_invalid=True)) == sorted(ids)
        assert {m.record.id for m in memory.recall("tea", user_id="alice")} == set(ids[1:])
        assert memory.get(ids[0]).state == "invalid"
    assert (store_path / "lexical.sqlite3.corrupt").read_bytes() == damaged


def test_a_second_damaged_file_is_moved_beside_the_first_not_over_it(store_path: Path) -> None:
    _store_with_records(store_path)
    local = store_path / "lexical.sqlite3"
    (store_path / "lexical.sqlite3.corrupt").write_bytes(b"kept from last time")
    _garbage_header(local)
    with pytest.raises(CorruptLocalDatabaseError, match=r"lexical\.sqlite3\.corrupt-2") as caught:
        Memory(store_path, embedder=HashEmbedder())
    assert caught.value.moved_to == store_path / "lexical.sqlite3.corrupt-2"


def test_a_page_damaged_inside_the_file_is_found_by_repair(store_path: Path) -> None:
    _store_with_records(store_path)
    local = store_path / "lexical.sqlite3"
    with local.open("r+b") as handle:  # the second page: opening reads only the header and the schema
        handle.seek(4096)
        handle.write(b"\xff" * 4096)
    with Memory(store_path, embedder=HashEmbedder()) as memory, pytest.raises(
            CorruptLocalDatabaseError, match=f"(?s){local} cannot be read.*mv {local} {local}.corrupt"):
        memory.repair()


def _delete(file: Path) -> None:
    file.unlink()


def _empty(file: Path) -> None:
    file.write_bytes(b"")


@pytest.mark.parametrize("loss", [_delete, _empty], ids=["deleted", "emptied"])
def test_a_lost_local_database_is_rebuilt_and_says_the_audit_trail_went_with_it(
        store_path: Path, loss: Callable[[Path], None], caplog: pytest.LogCaptureFixture) -> None:
    ids = _store_with_records(store_path)
    caplog.set_level(logging.WARNING, logger="mnemic")
    with Memory(store_path, embedder=HashEmbedder()):
        pass
    assert "audit trail" not in caplog.text  # an ordinary open says nothing

    loss(store_path / "lexical.sqlite3")
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        warnings = [r.getMessage() for r in caplog.records if "audit trail" in r.getMessage()]
        assert len(warnings) == 1
        assert str(store_path / "lexical.sqlite3") in warnings[0]
        assert "3 record(s)" in warnings[0] and "keyword index was rebuilt" in warnings[0]
        assert {m.record.id for m in memory.recall("tea", user_id="alice")} == set(ids[1:])
        # The record is there; what history() cannot know is said, not "no memory with id".
        with pytest.raises(KeyError, match=f"memory '{ids[1]}' exists .* but has no audit trail"):
            memory.history(ids[1])
        with pytest.raises(KeyError, match="no memory with id 'no-such-id'"):
            memory.history("no-such-id")
        memory.update(ids[1], text="Alice fact number 1 about green tea.", reason="more precise")
        assert [entry.action for entry in memory.history(ids[1])] == ["update"]

    caplog.clear()
    with Memory(store_path, embedder=HashEmbedder()):
        pass
    assert "audit trail" not in caplog.text  # said once, on the open that found it


def test_a_refused_open_leaves_the_store_unlocked(store_path: Path) -> None:
    _store_with_records(store_path)
    with pytest.raises(EmbedderMismatchError):
        Memory(store_path, embedder=HashEmbedder(dimension=64))
    _assert_nothing_left_locked(store_path)

"""Dates a caller gives and dates a store holds: one rule for a naive datetime everywhere (it is
UTC, whatever the machine's time zone), records that come back in UTC, and a store holding a date
no arithmetic can use (written by an older mnemic, which accepted any) that still opens, serves,
and erases its user."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import mnemic.core.intake
from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's local time is New York's (UTC-5 in January)."""
    with monkeypatch.context() as patch:
        patch.setenv("TZ", "America/New_York")
        time.tzset()
        yield
    time.tzset()


def test_a_naive_datetime_is_utc_when_remembered_and_when_forgetting(memory: Memory, new_york: None) -> None:
    record = memory.remember("Alice visited Oslo.", user_id="alice", created_at=datetime(2020, 1, 1, 12, 0))
    assert record is not None
    noon_utc = datetime(2020, 1, 1, 12, 0, tzinfo=timezone.utc)
    assert record.created_at == noon_utc and record.created_at.tzinfo is timezone.utc
    assert memory.get(record.id).created_at == noon_utc
    # An hour before it on the same clock reaches nothing; an hour after it reaches it.
    assert memory.forget(user_id="alice", older_than=datetime(2020, 1, 1, 11, 0)) == 0
    assert memory.forget(user_id="alice", older_than=datetime(2020, 1, 1, 13, 0)) == 1
    assert memory.list(user_id="alice") == []


def test_a_record_comes_back_in_utc_whatever_zone_it_was_given_in(memory: Memory) -> None:
    oslo = timezone(timedelta(hours=2))
    record = memory.remember("Bo moved to Bergen.", user_id="bo", created_at=datetime(2021, 6, 1, 14, 0, tzinfo=oslo))
    assert record is not None
    for seen in (record, memory.get(record.id), memory.list(user_id="bo")[0]):
        assert seen.created_at == datetime(2021, 6, 1, 12, 0, tzinfo=timezone.utc)
        assert seen.created_at.tzinfo is timezone.utc


@pytest.mark.parametrize("stored", [
    datetime.max.replace(tzinfo=timezone.utc),
    datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2))),
    datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),
], ids=["datetime.max", "past 9999 in UTC", "before year 1 in UTC"])
def test_a_store_holding_an_unusable_date_opens_serves_and_erases(
        store_path: Path, monkeypatch: pytest.MonkeyPatch, stored: datetime) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.remember("Bob likes coffee.", user_id="bob")
        memory.remember("Alice likes green tea.", user_id="alice")
        with monkeypatch.context() as patch:  # as an older mnemic did: no check on created_at
            patch.setattr(mnemic.core.intake, "check_created_at", lambda value: value, raising=False)
            memory.remember("Alice drinks it at odd dates.", user_id="alice", created_at=stored)

    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert sorted(memory.users()) == ["alice", "bob"]
        assert len(memory.list(user_id="alice")) == 2
        assert "Alice drinks it at odd dates." in [m.record.text for m in memory.recall("odd dates", user_id="alice")]
        memory.repair()
        assert memory.forget(user_id="alice") == 2
        assert memory.users() == ["bob"]
        assert [m.record.text for m in memory.recall("coffee", user_id="bob")] == ["Bob likes coffee."]


def test_an_iso_8601_created_at_is_read_as_pydantic_read_it(memory: Memory) -> None:
    record = memory.remember("Alice visited Bergen.", user_id="alice", created_at="2020-01-01T14:00:00+02:00")
    assert record is not None and record.created_at == datetime(2020, 1, 1, 12, 0, tzinfo=timezone.utc)
